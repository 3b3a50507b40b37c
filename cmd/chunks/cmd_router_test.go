package main

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
	"github.com/chunks-dev/chunks/router"
)

func TestRouterOptions(t *testing.T) {
	got := parsed(t, parseRouterInstall, "router", "install", "--schema", "r", "--shard-schema", "s", "--shard", "host=a,b dbname=x", "--shard", "dbname=y")
	want := router.Config{Schema: "r", ShardSchema: "s", Shards: []string{"host=a,b dbname=x", "dbname=y"}}
	if got.Config.Schema != want.Schema || got.Config.ShardSchema != want.ShardSchema || !slices.Equal(got.Config.Shards, want.Shards) {
		t.Errorf("got %+v, want %+v", got.Config, want)
	}
	t.Setenv("CHUNKS_SCHEMA", "from_env")
	if got := parsed(t, parseRouterInstall, "router", "install", "--shard", "dbname=y"); got.Config.Schema != "from_env" {
		t.Errorf("$CHUNKS_SCHEMA: got %+v", got.Config)
	}
	wantInvalid(t, &routerInstallOptions{Config: router.Config{Shards: []string{"dbname=y"}}}, "router install needs --schema (or $CHUNKS_SCHEMA)")
	wantInvalid(t, &routerInstallOptions{Config: router.Config{Schema: "r"}}, "router install needs a --shard DSN for each shard")
	wantInvalid(t, &routerInstallOptions{Config: router.Config{Schema: "r", Shards: []string{"dbname=a", "dbname=b", "dbname=c"}}}, "power of 2")
	wantExit(t, chunksIn(t, nil, "", "router", "install", "x"), 2, `chunks: usage: router install takes no arguments, got ["x"]`)
	wantExit(t, chunksIn(t, nil, "", "router", "shards", "x", "--json"), 2, `chunks: usage: router shards takes no arguments, got ["x" "--json"]`)
}

// A router over one shard, the lab's schema of the same database: install
// says so, and router shards lists it, as text and JSON.
func TestRouterRun(t *testing.T) {
	l := clitest.NewLab(t)
	var available bool
	if err := l.Conn.QueryRow(ctx, "select exists (select from pg_available_extensions where name = 'plproxy')").Scan(&available); err != nil {
		t.Fatal(err)
	}
	if !available {
		pgtest.RequireTool(t, errors.New("no plproxy extension on the test server"), "plproxy", "postgresql-15-plproxy")
	}
	schema := pgtest.NewSchemaName(t)
	t.Cleanup(func() {
		if _, err := l.Conn.Exec(ctx, "drop schema if exists "+schema+" cascade; drop server if exists "+router.Cluster(schema)+" cascade"); err != nil {
			t.Error(err)
		}
	})
	d := labDeps(l)
	d.schema = schema
	shard := l.ChunksDSN
	o := &routerInstallOptions{Config: router.Config{Schema: schema, ShardSchema: l.Name, Shards: []string{shard}}}
	got := wantRun(t, runRouterInstall, d, o)
	head, table, _ := strings.Cut(got, "\n")
	if head != "chunks router installed in schema "+schema+", over 1 shard:" || !strings.Contains(table, "│ p0    │") ||
		strings.Count(table, "\n") != 5 {
		t.Errorf("install:\n%s", got)
	}
	shards, err := router.Shards(ctx, pgtest.Connect(t, l.ChunksDSN+" search_path="+schema))
	if err != nil || len(shards) != 1 || shards[0].Name != "p0" {
		t.Fatalf("the router's shards: %+v, %v", shards, err)
	}
	if !strings.Contains(table, "│ p0    │ "+strings.TrimSpace(shards[0].Conninfo)+" │") || !strings.Contains(shards[0].Conninfo, "dbname='postgres'") {
		t.Errorf("install does not list %+v:\n%s", shards[0], got)
	}
	if got := wantRun(t, runRouterShards, d, &noArgs{}); got != table {
		t.Errorf("shards: got\n%s\nwant\n%s", got, table)
	}
	d.json = true
	r := chunksIn(t, nil, "", "--dsn", l.ChunksDSN, "--schema", schema, "--json", "router", "shards")
	var listed []router.Shard
	if err := json.Unmarshal([]byte(r.Stdout), &listed); err != nil || r.Code != 0 || !slices.Equal(listed, shards) {
		t.Errorf("shards --json: %v: %v", err, r)
	}
	if got, want := wantRun(t, runRouterInstall, d, o), clitest.MustJSON(t, map[string]any{"schema": schema, "shards": shards})+"\n"; got != want {
		t.Errorf("install --json again: got %s, want %s", got, want)
	}
}
