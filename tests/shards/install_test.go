package shards

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
	"github.com/chunks-dev/chunks/router"
)

// Install checks every shard through the new cluster before it commits: a
// shard without chunks, or one that does not answer, is named, and nothing
// is left behind (no schema, no foreign server). Bad input is refused
// before any connection. A second install changes the partitions in place.
func TestInstallChecksShards(t *testing.T) {
	t.Parallel()
	requirePlproxy(t)
	admin := pgtest.Connect(t, routerServer.DSN())
	schema := pgtest.NewSchemaName(t)
	for _, s := range shardServers[:2] {
		if err := pgtest.WithConn(s.DSN(), func(conn *pgx.Conn) error { return driver.Migrate(ctx, conn, schema, driver.MigrateOptions{}) }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := pgtest.WithConn(s.DSN(), func(conn *pgx.Conn) error {
				_, err := conn.Exec(ctx, "drop schema "+schema+" cascade")
				return err
			}); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "drop schema if exists "+schema+" cascade; drop server if exists "+router.Cluster(schema)+" cascade"); err != nil {
			t.Error(err)
		}
	})
	nothingLeft := func(what string) {
		t.Helper()
		var schemas, servers int
		if err := admin.QueryRow(ctx, `select (select count(*) from pg_namespace where nspname = $1),
			(select count(*) from pg_foreign_server where srvname = $2)`, schema, router.Cluster(schema)).Scan(&schemas, &servers); err != nil {
			t.Fatal(err)
		}
		if schemas != 0 || servers != 0 {
			t.Errorf("%s: left %d schema and %d foreign server behind", what, schemas, servers)
		}
	}
	install := func(shards ...string) error {
		return router.Install(ctx, admin, router.Config{Schema: schema, Shards: shards})
	}

	noChunks := shardServers[2].DSN() // migrated for no schema of this test
	err := install(shardServers[0].DSN(), noChunks)
	if !errors.Is(err, driver.ErrInvalid) || !strings.Contains(err.Error(), "shard p1: has no chunks in schema "+schema+": run chunks migrate") {
		t.Fatalf("install over a shard without chunks: %v", err)
	}
	nothingLeft("a shard without chunks")

	down := "host=127.0.0.1 port=1 dbname=postgres user=postgres" // nothing listens on port 1
	err = install(shardServers[0].DSN(), down)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "08006" || !strings.HasPrefix(pgErr.Message, "shard p1 is unavailable: ") {
		t.Fatalf("install over a shard that does not answer: %v", err)
	}
	nothingLeft("a shard that does not answer")

	for _, tc := range []struct {
		shards []string
		want   string
	}{
		{[]string{"a=1", "a=1", "a=1"}, "shards: PL/Proxy needs a power of 2 of them (1, 2, 4, ... 1024), got 3"},
		{nil, "got 0"},
		{[]string{shardServers[0].DSN(), shardServers[1].DSN() + " user=other"}, "shard p1: names another user or password than shard p0"},
		{[]string{"postgres://u:secret@h:notaport/db", "host=h"}, "shard p0: dsn: cannot parse it"},
	} {
		err := install(tc.shards...)
		if !errors.Is(err, driver.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("install %d shards: %v; want %q", len(tc.shards), err, tc.want)
		}
	}
	nothingLeft("refused input")

	if err := install(shardServers[0].DSN(), shardServers[1].DSN()); err != nil {
		t.Fatal(err)
	}
	if err := install(shardServers[1].DSN(), shardServers[0].DSN()); err != nil { // again, the other way round
		t.Fatal(err)
	}
	shards, err := router.Shards(ctx, pgtest.Connect(t, pgtest.WithSearchPath(routerServer.DSN(), schema)))
	if err != nil || len(shards) != 2 || !strings.Contains(shards[0].Conninfo, shardPort(shardServers[1].Port)) ||
		!strings.Contains(shards[1].Conninfo, shardPort(shardServers[0].Port)) || strings.Contains(shards[0].Conninfo, "user=") {
		t.Fatalf("shards after the second install: %+v, %v", shards, err)
	}

	// A router's schema is not a shard's, and the other way round.
	err = driver.Migrate(ctx, admin, schema, driver.MigrateOptions{})
	if !errors.Is(err, driver.ErrInvalid) || !strings.Contains(err.Error(), "holds a chunks router") {
		t.Errorf("migrate a router's schema: %v", err)
	}
	err = router.Install(ctx, pgtest.Connect(t, shardServers[0].DSN()), router.Config{Schema: schema, Shards: []string{shardServers[1].DSN()}})
	if !errors.Is(err, driver.ErrInvalid) || !strings.Contains(err.Error(), "holds chunks data") {
		t.Errorf("install a router over a shard's schema: %v", err)
	}
}

func shardPort(port int) string { return fmt.Sprintf("port='%d'", port) }

// The CLI refuses a router of 3 shards before it connects anywhere (exit 2).
func TestInstallCLIRefusesThreeShards(t *testing.T) {
	t.Parallel()
	r := clitest.Run(t, "router", "install", "--schema", "lab", "--dsn", "host=127.0.0.1 port=1",
		"--shard", "host=a", "--shard", "host=b", "--shard", "host=c")
	if r.Code != 2 || r.Stdout != "" || r.Stderr != "chunks: invalid: shards: PL/Proxy needs a power of 2 of them (1, 2, 4, ... 1024), got 3\n" {
		t.Fatalf("chunks router install with 3 shards: %v", r)
	}
}

// A shard's connection string may list several hosts, as for a shard's
// own failover: chunks router install keeps it whole (the CLI splits no
// --shard at its commas), and the router's server tries the hosts in turn.
// Here the first host has nothing listening; the second is the shard.
func TestMultiHostShard(t *testing.T) {
	t.Parallel()
	requirePlproxy(t)
	c := newCluster(t, shardServers[:1])
	s := shardServers[0]
	multi := fmt.Sprintf("host=127.0.0.1,127.0.0.1 port=1,%d user=postgres dbname=postgres", s.Port)
	r := clitest.Run(t, "router", "install", "--json", "--dsn", routerServer.DSN(), "--schema", c.schema, "--shard", multi)
	if r.Code != 0 || r.Signal != 0 || !strings.Contains(r.Stdout, fmt.Sprintf(`"conninfo":"host='127.0.0.1,127.0.0.1' port='1,%d' dbname='postgres'`, s.Port)) {
		t.Fatalf("chunks router install with a multi-host shard: %v", r)
	}
	j := job{tenant: "acme", id: "spring", orders: []int64{1}}
	c.place(t, []job{j}, 1)
	if res, err := (driver.JobRef{Tenant: j.tenant, ID: j.id}).RunChunk(ctx, c.router, nil); err != nil || !res.Done {
		t.Fatalf("run_chunk through the multi-host partition: %+v, %v", res, err)
	}
}
