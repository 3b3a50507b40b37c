package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name:  "dsn",
			Usage: "PostgreSQL connection string, URL or key=value (default: $CHUNKS_DSN, else $DATABASE_URL, else the libpq PG* variables)",
		},
		&cli.StringFlag{
			Name:  "schema",
			Usage: "the schema chunks is installed in; it becomes the session's search_path (default: $CHUNKS_SCHEMA)",
		},
		&cli.BoolFlag{Name: "json", Usage: "print machine-readable JSON (the driver's structs)"},
	}
}

// globalEnv is where a global flag's value comes from when it is not typed.
var globalEnv = map[string][]string{
	"dsn":    {"CHUNKS_DSN", "DATABASE_URL"},
	"schema": {"CHUNKS_SCHEMA"},
}

// global reads a global flag that may be typed before or after the command
// name: the innermost place it was typed wins, then its environment
// variables. (The flags carry no EnvVars of their own, so IsSet means typed.)
func global(c *cli.Context, name string) string {
	for _, ctx := range c.Lineage() {
		if ctx.IsSet(name) {
			return fmt.Sprint(ctx.Value(name))
		}
	}
	for _, env := range globalEnv[name] {
		if v := os.Getenv(env); v != "" {
			return v
		}
	}
	return c.String(name)
}

func jsonOut(c *cli.Context) bool { return global(c, "json") == "true" }

// dsn returns the connection string with the --schema search_path added.
func dsn(c *cli.Context) (string, error) {
	d := global(c, "dsn")
	schema := global(c, "schema")
	if schema == "" {
		return d, nil
	}
	if err := driver.CheckSchema(schema); err != nil {
		return "", err
	}
	return withSearchPath(d, schema), nil
}

// withSearchPath adds search_path as a startup parameter to a URL or
// key=value connection string (pgx sends unknown keys to the server as
// settings). schema has passed driver.CheckSchema, so it needs no quoting.
func withSearchPath(dsn, schema string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + "search_path=" + schema
	}
	return strings.TrimSpace(dsn + " search_path=" + schema)
}

// connect opens a connection on the global --dsn and --schema.
func connect(c *cli.Context) (*pgx.Conn, error) {
	d, err := dsn(c)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(d)
	if err != nil {
		return nil, &driver.Error{Kind: driver.ErrInvalid, Msg: "dsn: " + err.Error(), Err: err}
	}
	cfg.ConnectTimeout = driver.ConnectTimeout
	return pgx.ConnectConfig(c.Context, cfg)
}

// poolConfig is the pool configuration of the global --dsn and --schema.
func poolConfig(c *cli.Context) (*pgxpool.Config, error) {
	d, err := dsn(c)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(d)
	if err != nil {
		return nil, &driver.Error{Kind: driver.ErrInvalid, Msg: "dsn: " + err.Error(), Err: err}
	}
	cfg.ConnConfig.ConnectTimeout = driver.ConnectTimeout
	return cfg, nil
}

// withConn runs fn on a connection and closes it, keeping both errors.
func withConn(c *cli.Context, fn func(ctx context.Context, conn *pgx.Conn) error) (err error) {
	conn, err := connect(c)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := conn.Close(context.WithoutCancel(c.Context)); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return fn(c.Context, conn)
}
