package cli

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/internal/pgtest"
)

// demoFacts are what the demo's story must tell.
var demoFacts = []string{
	"register returned true",
	"SIGKILL",
	"nothing of its chunk is visible: next_index 10, 10 audit rows, 10 orders cancelled",
	"40 approved, 40 committed, 0 remaining: 40 matching, 0 drifted, 0 missing",
	"drifted: 1003 1017; missing: 1025",
	"40 approved, 40 committed, 0 remaining: 37 matching, 2 drifted, 1 missing",
	"registered job alien-desert-festival-undo: it restores the 37 orders still as the job left them",
	"left alone, since they changed after the job: drifted 1003 1017; missing 1025",
	"4 calls restored 37 orders to pending, revision + 1, with one audit row each",
	"37 approved, 37 committed, 0 remaining: 37 matching, 0 drifted, 0 missing",
	"38 festival orders are pending again: 37 restored by the undo, 1 re-opened by hand before it",
	"the job alien-desert-festival now reports 0 matching and 39 drifted orders, and was undone by alien-desert-festival-undo",
}

func wantDemo(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 || r.signal != 0 {
		t.Fatalf("want exit 0, got %v", r)
	}
	at := 0 // the facts come in this order
	for _, fact := range demoFacts {
		i := strings.Index(r.stdout[at:], fact)
		if i < 0 {
			t.Fatalf("the demo's output lacks %q after what came before it:\n%v", fact, r)
		}
		at += i + len(fact)
	}
	if !strings.Contains(r.stdout[at:], "\n\n") || strings.Contains(r.stdout[at:], "▸") {
		t.Fatalf("the demo does not end with the undo's report:\n%v", r)
	}
}

// TestDemo runs chunks demo on its own throwaway server (no --dsn).
func TestDemo(t *testing.T) {
	t.Parallel()
	_, err := localpg.FindBinDir()
	pgtest.RequireTool(t, err, "the PostgreSQL server binaries (chunks demo starts a server)", "postgresql")
	r := runWith(t, opts{timeout: 60 * time.Second}, "demo")
	wantDemo(t, r)
	m := regexp.MustCompile(`data in (\S+)`).FindStringSubmatch(r.stdout)
	if m == nil || !strings.Contains(r.stdout, "throwaway server is stopped and removed") {
		t.Fatalf("the demo does not say where its server was and that it is gone:\n%v", r)
	}
	if strings.Contains(r.stdout, "psql") || !strings.Contains(r.stdout, "run chunks demo --keep") {
		t.Fatalf("without --keep the demo must not offer a psql command for a server that is gone, and must point to --keep:\n%v", r)
	}
	if _, err := os.Stat(m[1]); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the throwaway server's folder %s is still there (%v)", m[1], err)
	}
}

// TestDemoKeep runs chunks demo --keep: the server stays, the psql command
// it prints reaches the story's data, and its stop command removes it.
func TestDemoKeep(t *testing.T) {
	t.Parallel()
	_, err := localpg.FindBinDir()
	pgtest.RequireTool(t, err, "the PostgreSQL server binaries (chunks demo starts a server)", "postgresql")
	r := runWith(t, opts{timeout: 60 * time.Second}, "demo", "--keep")
	wantDemo(t, r)
	m := regexp.MustCompile(`(?s)The server keeps running \(pid \d+\)\.\nLook at the data yourself:\n  psql "([^"]+)" -c '([^']+)'\nStop it and remove its data with:\n  (.+)\n`).
		FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("the demo --keep does not say, in this order, that the server runs, how to look, how to stop it:\n%v", r)
	}
	dsn, query, stop := m[1], m[2], m[3]
	t.Cleanup(func() {
		if out, err := exec.Command("sh", "-c", stop).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", stop, err, out)
		}
		dir := regexp.MustCompile(`rm -rf (\S+)`).FindStringSubmatch(stop)
		if dir == nil {
			t.Errorf("the stop command %q removes no folder", stop)
		} else if _, err := os.Stat(dir[1]); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after %q the folder %s is still there (%v)", stop, dir[1], err)
		}
	})
	_, err = exec.LookPath("psql")
	pgtest.RequireTool(t, err, "psql", "postgresql-client")
	out, err := exec.Command("psql", dsn, "-At", "-c", query).CombinedOutput()
	if rows := strings.Split(strings.TrimSpace(string(out)), "\n"); err != nil || len(rows) != 40+37 {
		t.Fatalf("the printed psql command on the kept server: %v, %d rows, want the 40 audit rows of the job and the 37 of its undo:\n%s",
			err, len(rows), out)
	}
}

// TestDemoOnDSN runs chunks demo in a new schema of the test database and
// reads the story's end back from that schema.
func TestDemoOnDSN(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	demoSchemas := func() []string {
		rows, _ := admin.Query(ctx, "select nspname::text from pg_namespace where nspname like 'festival\\_demo\\_%' order by 1")
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	before := demoSchemas()
	var schema string // the demo's schema, once its output names it
	t.Cleanup(func() {
		drop := []string{schema}
		if schema == "" { // the output did not say: every new one
			drop = slices.DeleteFunc(demoSchemas(), func(name string) bool { return slices.Contains(before, name) })
		}
		for _, name := range drop {
			if _, err := admin.Exec(context.Background(), "drop schema if exists "+pgx.Identifier{name}.Sanitize()+" cascade"); err != nil {
				t.Errorf("drop schema %s: %v", name, err)
			}
		}
	})

	r := runWith(t, opts{timeout: 60 * time.Second}, "demo", "--dsn", pgtest.DSN())
	m := regexp.MustCompile(`The schema (festival_demo_[a-z0-9]+) stays in your database`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("the demo does not name its schema:\n%v", r)
	}
	schema = m[1]
	wantDemo(t, r)
	if slices.Contains(before, schema) {
		t.Fatalf("the demo reused the existing schema %s", schema)
	}
	restored := slices.DeleteFunc(seq(1001, 1040), func(id int64) bool { return id == 1003 || id == 1017 || id == 1025 })
	wantJSON(t, run(t, "--dsn", pgtest.DSN(), "--schema", schema, "--json", "report", "alien-desert-festival"), driver.JobReport{
		Approved: seq(1001, 1040), Committed: seq(1001, 1040), Remaining: []int64{},
		Matching: []int64{}, Drifted: slices.DeleteFunc(seq(1001, 1040), func(id int64) bool { return id == 1025 }), Missing: []int64{1025},
	})
	wantJSON(t, run(t, "--dsn", pgtest.DSN(), "--schema", schema, "--json", "report", "alien-desert-festival-undo"), driver.JobReport{
		Approved: restored, Committed: restored, Remaining: []int64{}, Matching: restored, Drifted: []int64{}, Missing: []int64{},
	})
	for job, want := range map[string]int{"alien-desert-festival": 40, "alien-desert-festival-undo": 37} {
		var audit int
		if err := admin.QueryRow(ctx, "select count(*) from "+pgx.Identifier{schema, "job_audit"}.Sanitize()+" where job_id = $1", job).
			Scan(&audit); err != nil || audit != want {
			t.Fatalf("%s.job_audit has %d rows of %s (%v), want %d", schema, audit, job, err, want)
		}
	}
}

// seq is first, first+1, ..., last.
func seq(first, last int64) []int64 {
	out := []int64{}
	for id := first; id <= last; id++ {
		out = append(out, id)
	}
	return out
}
