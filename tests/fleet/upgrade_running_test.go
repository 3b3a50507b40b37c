package fleet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// previousMain is the last commit of main at schema version 9, before the
// writer role (version 10): the build a running fleet upgrades from.
const previousMain = "515db4c"

// workerLife bounds each worker process of an upgrade test: longer than
// every wait of the test together, so that a slow machine fails a wait,
// which says what it waited for, and never kills a worker first.
const workerLife = 4 * time.Minute

// buildChunksAt builds cmd/chunks as it was at commit rev of this
// repository (git archive, then go build) and returns the binary's path.
// Without git, or without that commit in the clone's history, the test is
// skipped, and fails under CI.
func buildChunksAt(t *testing.T, rev string) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	_, missing := exec.LookPath("git")
	if missing == nil {
		if out, err := exec.Command("git", "-C", root, "cat-file", "-e", rev+"^{commit}").CombinedOutput(); err != nil {
			missing = fmt.Errorf("commit %s is not in the clone's history (%v: %s)", rev, err, strings.TrimSpace(string(out)))
		}
	}
	pgtest.RequireTool(t, missing, "git, with the history of main back to "+rev, "git")
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, rev, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", rev, err, out)
	}
	bin := filepath.Join(dir, "chunks-"+rev)
	build := exec.Command("go", "build", "-o", bin, "./cmd/chunks")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build at %s: %v\n%s", rev, err, out)
	}
	return bin
}

// installedBy installs chunks into a new schema with the build bin (its
// chunks migrate) and makes an empty schema for the user's tables beside
// it. Both are dropped when the test ends, then the writer roles an upgrade
// may leave (SCHEMA_w, which the DBA makes, and SCHEMA_writer, which
// migrate makes). It returns the schema, with a connection whose
// search_path is it, the CLI's global flags for it, and the user's schema.
func installedBy(t *testing.T, bin string) (s *pgtest.Schema, globals []string, shop string) {
	t.Helper()
	admin := pgtest.Connect(t, pgtest.DSN())
	name, shop := pgtest.NewSchemaName(t), pgtest.NewSchemaName(t)
	t.Cleanup(func() {
		for _, sql := range []string{"drop schema if exists " + name + " cascade", "drop schema if exists " + shop + " cascade",
			"drop role if exists " + name + "_w", "drop role if exists " + name + "_writer"} {
			if _, err := admin.Exec(ctx, sql); err != nil {
				t.Errorf("%s: %v", sql, err)
			}
		}
	})
	globals = []string{"--dsn", pgtest.DSN(), "--schema", name}
	if r := clitest.RunWith(t, clitest.Options{Binary: bin}, append(globals, "migrate")...); r.Code != 0 {
		t.Fatalf("migrate with %s: %v", bin, r)
	}
	s = &pgtest.Schema{Name: name, Conn: pgtest.Connect(t, pgtest.WithSearchPath(pgtest.DSN(), name))}
	s.Exec(t, "create schema "+shop)
	return s, globals, shop
}

// A fleet of the previous build at work, upgraded as docs/installing-and-
// upgrading.md says: the DBA makes the writer and grants it the table, the
// new binary migrates while the old worker runs chunks of declared-change
// jobs, then the workers are replaced one by one. Every job finishes, and
// every target's row was changed exactly once, with one audit row each.
func TestUpgradeARunningFleetFromThePreviousBuild(t *testing.T) {
	t.Parallel()
	old := buildChunksAt(t, previousMain)
	s, globals, shop := installedBy(t, old)
	conn := s.Conn
	writer := s.Name + "_w"
	for _, sql := range []string{
		"create table " + shop + ".payments(payment_id bigint primary key, status text not null, lock_version integer not null)",
		"insert into " + shop + ".payments select g, 'captured', 0 from generate_series(1, 40) g",
	} {
		s.Exec(t, sql)
	}
	s.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": "hold", "table": "%s.payments", "key": "payment_id",
	  "version": "lock_version", "when": {"status": "captured"}, "set": {"status": "on_hold"}}`, shop))
	for j := 0; j < 4; j++ {
		parts := make([]string, 10)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"payment_id": %d, "lock_version": 0}`, j*10+i+1)
		}
		s.Exec(t, "select register_change('hold', $1)", fmt.Sprintf(`{"job_id": "u%d", "tenant": "t", "chunk_size": 1, "allow_partial": true, "targets": [%s]}`,
			j+1, strings.Join(parts, ", ")))
	}
	s.Exec(t, "select run_chunk('u1')")

	// The old fleet at work: two chunks a second per job.
	oldWorker := clitest.Start(t, clitest.Options{Name: "old worker", Binary: old, Timeout: workerLife},
		append(globals, "worker", "--id", "old", "--verbose", "--concurrency", "2", "--rate", "2")...)
	oldWorker.WaitLine(t, 0, 20*time.Second, "msg=ready")
	progress := func() int {
		return pgtest.MustInt(t, conn, "select coalesce(sum(next_index), 0)::int from jobs")
	}
	pgtest.WaitFor(t, 20*time.Second, "the old worker's first chunks", func() bool { return progress() >= 4 })

	// The DBA's part (docs/installing-and-upgrading.md), then the new binary's migrate, mid-job.
	for _, sql := range []string{
		"create role " + writer + " nologin",
		"grant usage on schema " + shop + " to " + writer,
		"grant select, update on " + shop + ".payments to " + writer,
	} {
		s.Exec(t, sql)
	}
	if r := clitest.Run(t, append(globals, "migrate", "--writer", writer)...); r.Code != 0 {
		t.Fatalf("migrate with this build: %v", r)
	}
	if got := progress(); got >= 40 {
		t.Fatalf("every chunk ran before the upgrade (%d); the test upgrades nothing in flight", got)
	}
	if got := pgtest.MustString(t, conn, "select p.proowner::regrole::text from pg_proc as p where p.oid = 'apply_hold(text, text, integer, jsonb)'::regprocedure"); got != writer {
		t.Errorf("the change's function belongs to %s after migrate, want the writer %s", got, writer)
	}
	// The old worker goes on through the new functions; then the workers
	// are replaced one by one.
	at := progress()
	pgtest.WaitFor(t, 20*time.Second, "a chunk of the old worker after migrate", func() bool { return progress() > at })
	newWorker := clitest.Start(t, clitest.Options{Name: "new worker", Timeout: workerLife}, append(globals, "worker", "--id", "new", "--verbose", "--concurrency", "2")...)
	newWorker.WaitLine(t, 0, 20*time.Second, "msg=ready")
	explainOnFailure(t, conn, oldWorker, newWorker)
	stopWorkers(t, oldWorker)
	pgtest.WaitFor(t, 60*time.Second, "every job done", func() bool {
		return pgtest.MustInt(t, conn, "select count(*)::int from job_shapes where next_index < targets") == 0
	})
	stopWorkers(t, newWorker)

	if got := pgtest.MustString(t, conn, "select string_agg(status || ' ' || lock_version || ' ' || n, ', ') from (select status, lock_version, count(*) as n from "+
		shop+".payments group by 1, 2 order by 1, 2) as x"); got != "on_hold 1 40" {
		t.Errorf("rows after the upgrade (status, lock_version, count): %s", got)
	}
	if got := pgtest.MustString(t, conn, `select count(*) || ' ' || count(distinct (job_id, ordinal)) || ' ' || count(distinct key)
	  || ' ' || count(*) filter (where version_before = 0 and version_after = 1) from change_audit`); got != "40 40 40 40" {
		t.Errorf("audit after the upgrade (rows, distinct ordinals, distinct keys, 0 to 1): %s", got)
	}
	for _, w := range []*clitest.Proc{oldWorker, newWorker} {
		for _, line := range w.Lines() {
			if strings.Contains(line, "level=ERROR") {
				t.Errorf("%s logged: %s", w.Name, line)
			}
		}
	}
}
