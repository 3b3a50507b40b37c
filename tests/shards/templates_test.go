package shards

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/jackc/tern/v2/migrate"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/router"
	chunkssql "github.com/chunks-dev/chunks/sql"
)

// A new routed call is one more file of the router's code package: here two
// test functions on the shards, one of a job with more arguments (as
// pause_job_after(job_id, after) and register_undo(job_id, new_job_id)
// are) and one of a plan (as check_plan(plan) is), routed by the package's
// own templates job_call.sql and plan_call.sql. A job's call has its
// tenant-scoped signature on the shards, one template call of the chunks
// code package's tenant_call.sql.
func TestNewRoutedCallIsOneFile(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers[:2])
	c.place(t, []job{{tenant: "acme", id: "spring", orders: []int64{1}}}, 1)
	for _, sh := range c.shards {
		if _, err := sh.conn.Exec(ctx, `
			create function echo_args(job_id text, n integer, word text default 'x') returns jsonb language sql
			as $$ select jsonb_build_object('job_id', job_id, 'n', n, 'word', word, 'shard', current_setting('chunks.shard', true)) $$;
			create function echo_plan(plan jsonb) returns jsonb language sql
			as $$ select plan || jsonb_build_object('shard', current_setting('chunks.shard', true)) $$`); err != nil {
			t.Fatal(err)
		}
		if _, err := sh.conn.Exec(ctx, codeSQL(t, chunkssql.Functions(), `{{ template "common/tenant_call.sql" (merge (dict "name" "echo_args" "returns" "jsonb"
  "volatility" "stable" "missing" "conflict" "args" (list "n integer" "word text default 'x'") "comment" "A test.") .) }}`,
			map[string]any{"schema": c.schema})); err != nil {
			t.Fatal(err)
		}
	}
	sql := codeSQL(t, chunkssql.Router(), `
{{ template "job_call.sql" (merge (dict "name" "echo_args" "returns" "jsonb"
  "args" (list "n integer" "word text default 'x'") "comment" "A test of a routed call with more arguments.") .) }}
{{ template "plan_call.sql" (merge (dict "name" "echo_plan" "returns" "jsonb" "comment" "A test of a routed call of a plan.") .) }}
`,
		map[string]any{"schema": c.schema, "shard_schema": c.schema, "cluster": router.Cluster(c.schema)})
	if _, err := c.router.Exec(ctx, sql); err != nil {
		t.Fatalf("install the two calls: %v\n%s", err, sql)
	}
	shard := c.shardOf(t, "acme").name
	for _, tc := range []struct{ call, want string }{
		{"select echo_args('acme', 'spring', 7)::text", `{"n": 7, "word": "x", "shard": "` + shard + `", "job_id": "spring"}`},
		{"select echo_args('acme', 'spring', 7, 'y')::text", `{"n": 7, "word": "y", "shard": "` + shard + `", "job_id": "spring"}`},
		{`select echo_plan('{"tenant": "acme", "job_id": "x"}')::text`, `{"shard": "` + shard + `", "job_id": "x", "tenant": "acme"}`},
	} {
		var got string
		if err := c.router.QueryRow(ctx, tc.call).Scan(&got); err != nil || got != tc.want {
			t.Errorf("%s = %s, %v; want %s", tc.call, got, err, tc.want)
		}
	}
	if _, err := c.router.Exec(ctx, "select echo_args('globex', 'spring', 7)"); err == nil || !clitest.ContainsAll(err.Error(), "job spring: not found for tenant globex") {
		t.Errorf("echo_args of another tenant's job: %v", err)
	}
}

// codeSQL is install, a template that may call the templates of the code
// package pkg (sql/functions or sql/router), evaluated with data as an
// install would.
func codeSQL(t *testing.T, pkg fs.FS, install string, data map[string]any) string {
	t.Helper()
	files := fstest.MapFS{"install.sql": {Data: []byte(install)}}
	if err := fs.WalkDir(pkg, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == "install.sql" {
			return err
		}
		data, err := fs.ReadFile(pkg, path)
		files[path] = &fstest.MapFile{Data: data}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	code, err := migrate.LoadCodePackage(files)
	if err != nil {
		t.Fatal(err)
	}
	sql, err := code.Eval(data)
	if err != nil {
		t.Fatal(err)
	}
	return sql
}
