package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// docs/installing-and-upgrading.md's tern CLI install (go tool tern: tern is a tool of this module) works as written, and a schema installed by
// the tern CLI is the same as one installed by chunks migrate.
func TestTernCLIInstall(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(pgtest.DSN())
	if err != nil {
		t.Fatal(err)
	}
	schema := pgtest.NewSchemaName(t)
	admin := pgtest.Connect(t, pgtest.DSN())
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "drop schema if exists "+schema+" cascade"); err != nil {
			t.Error(err)
		}
	})
	if _, err := admin.Exec(ctx, "create schema "+schema); err != nil {
		t.Fatal(err)
	}
	env := append(pgtest.CleanEnv(), "CHUNKS_SCHEMA="+schema, "PGHOST="+cfg.Host, "PGPORT="+strconv.Itoa(int(cfg.Port)),
		"PGUSER="+cfg.User, "PGDATABASE="+cfg.Database, "PGPASSWORD="+cfg.Password, "PGSSLMODE=disable")
	for _, args := range [][]string{
		{"migrate", "-c", "tern.conf", "-m", "sql/migrations"},
		{"code", "install", "sql/functions", "-c", "tern.conf"},
	} {
		cmd := exec.Command("go", append([]string{"tool", "tern"}, args...)...) // as docs/installing-and-upgrading.md says
		cmd.Dir, cmd.Env = root, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("tern %v: %v\n%s", args, err, out)
		}
	}
	functions := func() string {
		var s string
		if err := admin.QueryRow(ctx, `select string_agg(p.oid || ':' || md5(p.prosrc), ',' order by p.proname, p.oid)
		      from pg_proc p where p.pronamespace = $1::regnamespace`, schema).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := functions()
	if err := driver.Migrate(ctx, admin, schema, driver.MigrateOptions{}); err != nil {
		t.Fatalf("chunks migrate after tern: %v", err)
	}
	if after := functions(); after != before {
		t.Fatalf("chunks migrate changed what tern installed:\n%s\n%s", before, after)
	}
	var created bool
	if err := admin.QueryRow(ctx, "select "+schema+`.register('{"job_id": "t", "tenant": "a", "chunk_size": 1,
	      "allow_partial": true, "targets": [{"id": 1, "revision": 0, "qty": 1}]}')`).Scan(&created); err != nil || !created {
		t.Fatalf("register after a tern install: %v %v", created, err)
	}
	if _, err := os.Stat(filepath.Join(root, "tern.conf")); err != nil {
		t.Fatal(err)
	}
}
