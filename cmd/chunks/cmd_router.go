package main

import (
	"context"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/router"
)

func routerCommand() *cli.Command {
	return &cli.Command{
		Name:  "router",
		Usage: "set up and look at a chunks router: tenants spread over several Postgres servers through PL/Proxy",
		Description: "A router database holds no chunks data: each call runs on the shard that hashtext(tenant)\n" +
			"picks, as one transaction there. Run chunks migrate on every shard first. Then the job commands\n" +
			"take --tenant with the router's --dsn, chunks register and status work as they are, and each\n" +
			"shard runs its own workers (chunks worker --dsn SHARD).\n\n" +
			"Example:\n  chunks router install --schema lab --dsn \"$ROUTER\" --shard \"$SHARD0\" --shard \"$SHARD1\"\n" +
			"  chunks --schema lab --dsn \"$ROUTER\" drain --tenant acme spring-cleanup",
		Subcommands: []*cli.Command{routerInstallCommand(), routerShardsCommand()},
	}
}

func routerInstallCommand() *cli.Command {
	return &cli.Command{
		Name:      "install",
		Usage:     "make the database of --dsn a router over the shards, in schema --schema",
		UsageText: "chunks router install --schema S [--dsn DSN] [--shard-schema S] --shard DSN --shard DSN ...",
		Description: "Run it as a superuser. In one transaction: the plproxy extension (in schema plproxy), the\n" +
			"PL/Proxy cluster chunks_SCHEMA with the partitions p0 ... pN-1 in the order of the --shard flags\n" +
			"(N a power of 2) and a user mapping for you with the shards' user and password (written with\n" +
			"the server's statement logging off), and the routing functions in SCHEMA. Before it commits,\n" +
			"every shard must answer and have chunks installed in --shard-schema (default: --schema); a\n" +
			"failure names the shard and leaves nothing behind. Idempotent; run it again with other shards\n" +
			"to reshard. The router's server connects to the shards, so each --shard names host, port and\n" +
			"dbname as that server sees them, and sslcert/sslkey name its files. A --shard may hold no\n" +
			"secret but its password (sslpassword is refused: the user mapping cannot hold it).\n" +
			"With --json it prints {\"schema\", \"shards\": [{\"shard\", \"conninfo\"}, ...]} (no passwords).\n\n" +
			"Example:\n  chunks router install --dsn 'host=db0 dbname=router' --schema lab \\\n" +
			"    --shard 'host=db1 dbname=shop' --shard 'host=db2 dbname=shop'",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "shard", Usage: "a shard's connection string (`DSN`), once per shard, in partition order"},
			&cli.StringFlag{Name: "shard-schema", Usage: "the chunks `SCHEMA` on the shards (default: --schema)"},
		},
		Action: action(parseRouterInstall, runRouterInstall),
	}
}

// routerInstallOptions is chunks router install --shard DSN ... [--shard-schema S].
type routerInstallOptions struct {
	Config router.Config // Schema: the global --schema (or $CHUNKS_SCHEMA), where the routing functions go; the shards
}

// parseRouterInstall fills the schema, --shard-schema and the --shard
// flags; it takes no arguments.
func parseRouterInstall(c *cli.Context) (*routerInstallOptions, error) {
	o := &routerInstallOptions{Config: router.Config{Schema: global(c, "schema"), ShardSchema: c.String("shard-schema"),
		Shards: c.StringSlice("shard")}}
	_, err := positional(c)
	return o, err
}

// Validate checks that there are a schema and shards, and the shards'
// connection strings (router.Config.Validate).
func (o *routerInstallOptions) Validate() error {
	if o.Config.Schema == "" {
		return usagef("router install needs --schema (or $CHUNKS_SCHEMA)")
	}
	if len(o.Config.Shards) == 0 {
		return usagef("router install needs a --shard DSN for each shard")
	}
	return o.Config.Validate()
}

// runRouterInstall installs the router and lists its shards.
func runRouterInstall(ctx context.Context, d deps, o *routerInstallOptions, out io.Writer) error {
	schema := o.Config.Schema
	var shards []router.Shard
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		if err := router.Install(ctx, conn, o.Config); err != nil {
			return err
		}
		shards, err = routerShards(ctx, conn, schema)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		return printJSON(out, map[string]any{"schema": schema, "shards": shards})
	}
	say(out, "chunks router installed in schema %s, over %s:", schema, plural(len(shards), "shard"))
	printShards(out, shards)
	return nil
}

func routerShardsCommand() *cli.Command {
	return &cli.Command{
		Name:      "shards",
		Usage:     "list the router's shards and their connection strings (no passwords)",
		UsageText: "chunks router shards [--dsn DSN] [--schema S] [--json]",
		Description: "Each shard runs its own workers: chunks worker --dsn with the shard's own connection string\n" +
			"(as this machine reaches it). Read from the router's catalog; no shard is asked.\n\n" +
			"Example:\n  chunks --schema lab router shards",
		Action: action(parseNoArgs, runRouterShards),
	}
}

// runRouterShards lists the router's shards.
func runRouterShards(ctx context.Context, d deps, _ *noArgs, out io.Writer) error {
	return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) ([]router.Shard, error) {
		return router.Shards(ctx, conn)
	}, func(shards []router.Shard) { printShards(out, shards) })
}

// routerShards lists the shards of the router in schema, whatever the
// connection's search_path.
func routerShards(ctx context.Context, conn *pgx.Conn, schema string) ([]router.Shard, error) {
	if _, err := conn.Exec(ctx, "select set_config('search_path', $1, false)", schema); err != nil {
		return nil, err
	}
	return router.Shards(ctx, conn)
}

// printShards prints the shards as a table.
func printShards(out io.Writer, shards []router.Shard) {
	t := newTable(out, "shard", "connection (as the router's server uses it)")
	for _, s := range shards {
		t.AppendRow([]any{s.Name, terminalSafe(strings.TrimSpace(s.Conninfo))})
	}
	t.Render()
}
