package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
	if v, ok := typed(c, name); ok {
		return v
	}
	for _, env := range globalEnv[name] {
		if v := os.Getenv(env); v != "" {
			return v
		}
	}
	return c.String(name)
}

// typed is a global flag's value only when it was typed on the command
// line, before or after the command name (the innermost wins).
func typed(c *cli.Context, name string) (string, bool) {
	for _, ctx := range c.Lineage() {
		if ctx.IsSet(name) {
			return fmt.Sprint(ctx.Value(name)), true
		}
	}
	return "", false
}

// connConfig is the connection of the global --dsn and --schema. The schema
// is checked before anything else and becomes the session's search_path as
// a startup parameter, never by editing the connection string. A cancelled
// command (chunks drain on SIGINT) cancels its statement on the server, so
// the chunk in flight rolls back at once (driver.ParseDSN sees to that).
func (d deps) connConfig() (*pgx.ConnConfig, error) {
	if d.schema != "" {
		if err := driver.CheckSchema(d.schema); err != nil {
			return nil, err
		}
	}
	cfg, err := driver.ParseDSN(d.dsn)
	if err != nil {
		return nil, err
	}
	if d.schema != "" {
		cfg.RuntimeParams["search_path"] = d.schema
	}
	return cfg, nil
}

// connectHint adds to a failed connection, when no DSN was given, where
// chunks looked for one: libpq's own message only names the socket it tried.
func (d deps) connectHint(err error) error {
	var connectErr *pgconn.ConnectError
	if err == nil || d.dsn != "" || !errors.As(err, &connectErr) {
		return err
	}
	return fmt.Errorf("%w (no connection string was given: not --dsn, $CHUNKS_DSN nor $DATABASE_URL; "+
		"so the libpq PG* variables and defaults were used)", err)
}

// connect opens a connection on the global --dsn and --schema.
func (d deps) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := d.connConfig()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	return conn, d.connectHint(err)
}

// poolConfig is the pool configuration of the global --dsn and --schema.
// Its connections are connConfig's: the schema as a startup parameter, the
// connect timeout, and cancel requests when a context ends.
func (d deps) poolConfig() (*pgxpool.Config, error) {
	conn, err := d.connConfig()
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig = conn
	return cfg, nil
}

// withConn runs fn on a connection and closes it, keeping both errors. A
// function that looks missing because the role has no access to the schema
// is said to be that (driver.ExplainMissing).
func (d deps) withConn(ctx context.Context, fn func(ctx context.Context, conn *pgx.Conn) error) (err error) {
	conn, err := d.connect(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := conn.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return driver.ExplainMissing(ctx, conn, fn(ctx, conn), d.access)
}

// viewerCommands are the commands that only read: a viewer may run them.
// A subcommand counts by its name (campaign status is status) or by its
// path (change list).
var viewerCommands = []string{"inspect", "report", "verify", "status", "serve", "change list", "change show"}

// commandAccess is the access the command of c needs.
func commandAccess(c *cli.Context) driver.Access {
	if slices.Contains(viewerCommands, c.Command.Name) || slices.Contains(viewerCommands, cmdPath(c)) {
		return driver.Viewer
	}
	return driver.Operator
}
