package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:      "migrate",
		Usage:     "create the schema if missing and install or upgrade the tables and functions",
		UsageText: "chunks migrate --schema SCHEMA [--owner ROLE] [--dsn DSN]",
		Description: "Idempotent, and safe when many processes run it at once. Nothing is created outside SCHEMA\n" +
			"(tern's version table is SCHEMA.schema_version).\n\n" +
			"Everything in SCHEMA belongs to one owner, and the functions run as it (SECURITY DEFINER):\n" +
			"--owner ROLE names it (a role that is not a superuser, see docs/roles.md); without it\n" +
			"the schema keeps its owner, or belongs to you when migrate creates it. When the owner is a\n" +
			"superuser, migrate says so on stderr, as it does what the migrations report (an upgrade's\nchanges to privileges, approvals recorded for jobs registered before).\n" +
			"Then give roles access with chunks grant.\n\n" +
			"Example:\n  chunks migrate --dsn 'postgres://admin@localhost/shop' --schema lab --owner chunks_owner",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "owner", Usage: "the role that owns SCHEMA, its tables and functions (default: the schema's owner, or you)"},
			&cli.StringFlag{Name: "writer", Usage: "the NOLOGIN role that reads and writes your tables for declared changes, so their triggers and policies run as it (default: the recorded one, else SCHEMA_writer, created when you may create roles)"},
		},
		Action: action(parseMigrate, runMigrate),
	}
}

// migrateOptions is chunks migrate --schema SCHEMA [--owner ROLE] [--writer ROLE]. The
// schema is the global --schema (or $CHUNKS_SCHEMA), which migrate needs.
type migrateOptions struct {
	Schema string // the schema to install chunks in
	Owner  string // --owner: the role that owns it; "" keeps the schema's owner, or you
	Writer string // --writer: the role that writes the user's tables; "" keeps the recorded one, or SCHEMA_writer
}

// parseMigrate fills migrateOptions from the command line (no arguments).
func parseMigrate(c *cli.Context) (*migrateOptions, error) {
	_, err := positional(c)
	return &migrateOptions{Schema: global(c, "schema"), Owner: c.String("owner"), Writer: c.String("writer")}, err
}

// Validate checks that there is a schema, and its name.
func (o *migrateOptions) Validate() error {
	if o.Schema == "" {
		return usagef("migrate needs --schema (or $CHUNKS_SCHEMA)")
	}
	return driver.CheckSchema(o.Schema)
}

// runMigrate installs or upgrades chunks in the schema, saying on stderr
// what the migrations report and when the owner is a superuser.
func runMigrate(ctx context.Context, d deps, o *migrateOptions, out io.Writer) error {
	d.schema = o.Schema
	cfg, err := d.connConfig()
	if err != nil {
		return err
	}
	// What chunks' migrations say (their notices start "chunks: "),
	// not the server's "already exists, skipping" of IF NOT EXISTS.
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if msg, ok := strings.CutPrefix(n.Message, "chunks: "); ok {
			fmt.Fprintf(d.stderr, "chunks migrate: %s: %s\n", n.Severity, terminalSafe(msg))
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return d.connectHint(err)
	}
	var version int
	var owner string
	var superuser bool
	err = driver.Migrate(ctx, conn, o.Schema, driver.MigrateOptions{Owner: o.Owner, Writer: o.Writer})
	if err == nil {
		err = conn.QueryRow(ctx, `select v.version, r.rolname, r.rolsuper
		  from `+pgx.Identifier{o.Schema, "schema_version"}.Sanitize()+` as v, pg_namespace as n join pg_roles as r on r.oid = n.nspowner
		 where n.nspname = $1`, o.Schema).Scan(&version, &owner, &superuser)
	}
	if err = errors.Join(err, conn.Close(context.WithoutCancel(ctx))); err != nil {
		return err
	}
	if superuser {
		fmt.Fprintf(d.stderr, "chunks migrate: WARNING: schema %s and its SECURITY DEFINER functions belong to %s, a superuser: "+
			"every role granted chunks access then acts with a superuser's rights inside them. "+
			"Recommended: chunks migrate --owner ROLE with a role that is not a superuser (docs/roles.md)\n",
			o.Schema, terminalSafe(owner))
	}
	if d.json {
		return printJSON(out, map[string]any{"schema": o.Schema, "version": version, "owner": owner})
	}
	say(out, "chunks is installed in schema %s (migration version %d, functions up to date), owned by %s", o.Schema, version, terminalSafe(owner))
	return nil
}
