package main

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:      "migrate",
		Usage:     "create the schema if missing and install or upgrade the tables and functions",
		UsageText: "chunks migrate --schema SCHEMA [--dsn DSN]",
		Description: "Idempotent, and safe when many processes run it at once. Nothing is created outside SCHEMA\n" +
			"(tern's version table is SCHEMA.schema_version).\n\n" +
			"Example:\n  chunks migrate --dsn 'postgres://app@localhost/shop' --schema lab",
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usagef("migrate takes no arguments, got %s", argList(c.Args().Slice()))
			}
			schema := global(c, "schema")
			if schema == "" {
				return usagef("migrate needs --schema (or $CHUNKS_SCHEMA)")
			}
			var version int
			err := withConn(c, func(ctx context.Context, conn *pgx.Conn) error {
				if err := driver.Migrate(ctx, conn, schema); err != nil {
					return err
				}
				return conn.QueryRow(ctx, "select version from "+pgx.Identifier{schema, "schema_version"}.Sanitize()).Scan(&version)
			})
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(map[string]any{"schema": schema, "version": version})
			}
			say("chunks is installed in schema %s (migration version %d, functions up to date)", schema, version)
			return nil
		},
	}
}
