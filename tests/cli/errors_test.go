package cli

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestExitCodes: 2 for bad input and usage, 3 for a conflict, 1 for a
// runtime error; the error is one line on stderr starting with "chunks: ",
// stdout stays empty, and the database is left exactly as it was.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	j := seedJob(t, newLab(t), "j", 10, 4)
	g := j.lab.Globals()
	at := func(args ...string) []string { return append(append([]string{}, g...), args...) }
	samePlan := func(change string) string {
		return fmt.Sprintf(`{"job_id": "j", "tenant": "alien-desert", "targets": [{"id": 101, "revision": %s, "qty": 1}], "chunk_size": 4, "allow_partial": true}`, change)
	}
	bad := func(args ...string) []string {
		return append([]string{"--dsn", unreachableDSN, "--schema", j.lab.Name}, args...)
	}

	cases := []struct {
		name  string
		args  []string
		stdin string
		code  int
		parts []string // on stderr
		match string   // a regexp stderr must match
	}{
		// Bad input and usage: 2.
		{name: "manifest qty 0", args: []string{"manifest", "--job-id", "k", "--tenant", "t", "--chunk-size", "2", "--allow-partial", "-"},
			stdin: `[{"id": 1, "revision": 0, "qty": 1}, {"id": 2, "revision": 0, "qty": 0}]`, code: 2,
			match: `(items|targets)\[1\]\.qty`},
		{name: "manifest chunk size 11", args: []string{"manifest", "--job-id", "k", "--tenant", "t", "--chunk-size", "11", "--allow-partial", "-"},
			stdin: `[{"id": 1, "revision": 0, "qty": 1}]`, code: 2, parts: []string{"chunk_size"}},
		{name: "manifest without chunk-size", args: []string{"manifest", "--job-id", "k", "--tenant", "t", "--allow-partial", "-"},
			stdin: `[{"id": 1, "revision": 0, "qty": 1}]`, code: 2, parts: []string{"usage: manifest needs --chunk-size"}},
		{name: "manifest without job-id and tenant", args: []string{"manifest", "--chunk-size", "1", "--allow-partial", "-"},
			stdin: `[{"id": 1, "revision": 0, "qty": 1}]`, code: 2, parts: []string{"usage: manifest needs --job-id, --tenant"}},
		{name: "manifest without any flag", args: []string{"manifest", "items.json"}, code: 2,
			parts: []string{"usage: manifest needs --job-id, --tenant, --chunk-size"}},
		{name: "manifest --dsn", args: []string{"manifest", "--dsn", pgtest.DSN(), "--job-id", "k", "--tenant", "t", "--chunk-size", "1", "--allow-partial", "-"},
			stdin: `[{"id": 1, "revision": 0, "qty": 1}]`, code: 2, parts: []string{"flag provided but not defined: -dsn"}},
		{name: "manifest without allow-partial", args: []string{"manifest", "--job-id", "k", "--tenant", "t", "--chunk-size", "1", "-"},
			stdin: `[{"id": 1, "revision": 0, "qty": 1}]`, code: 2, parts: []string{"allow_partial"}},
		{name: "register 1.0", args: at("register", "-"), stdin: samePlan("1.0"), code: 2,
			parts: []string{"targets[0].revision", "integer", "1.0"}},
		{name: "register duplicate key", args: at("register", "-"),
			stdin: `{"job_id": "k", "job_id": "k", "tenant": "t", "targets": [{"id": 1, "revision": 0, "qty": 1}], "chunk_size": 1, "allow_partial": true}`,
			code:  2, parts: []string{"duplicate key", "job_id"}},
		{name: "crash-at bogus", args: at("run", "--crash-at", "bogus", "j"), code: 2, parts: []string{"--crash-at", "bogus", "after-orders"}},
		{name: "fail-at bogus", args: at("run", "--fail-at", "bogus", "j"), code: 2, parts: []string{"--fail-at", "bogus"}},
		{name: "max-chunks 65", args: at("drain", "--max-chunks", "65", "j"), code: 2, parts: []string{"max_chunks", "65"}},
		{name: "max-chunks 0 json", args: at("drain", "--json", "--max-chunks", "0", "j"), code: 2, parts: []string{"max_chunks", "0"}},
		{name: "workers 65", args: at("drain", "--workers", "65", "j"), code: 2, parts: []string{"workers", "65"}},
		{name: "flag after job", args: at("report", "j", "--json"), code: 2, parts: []string{"--json", "put flags before the job id"}},
		{name: "crash-at after job", args: at("run", "j", "--crash-at", "after-orders"), code: 2, parts: []string{"put flags before the job id"}},
		{name: "max-chunks after job", args: at("drain", "j", "--max-chunks", "1"), code: 2, parts: []string{"put flags before the job id"}},
		{name: "unknown flag", args: at("report", "--bogus", "j"), code: 2, parts: []string{"bogus"}},
		{name: "unknown global flag", args: append([]string{"--bogus"}, at("report", "j")...), code: 2, parts: []string{"bogus"}},
		{name: "unknown command", args: at("frobnicate", "j"), code: 2, parts: []string{"frobnicate"}},
		{name: "report without job", args: at("report"), code: 2, parts: []string{"JOB"}},
		{name: "run without job", args: at("run"), code: 2, parts: []string{"JOB"}},
		{name: "drain without job", args: at("drain", "--json"), code: 2, parts: []string{"JOB"}},
		{name: "inspect without job", args: at("inspect"), code: 2, parts: []string{"JOB"}},
		{name: "two jobs", args: at("report", "j", "k"), code: 2, parts: []string{"one JOB"}},
		{name: "bad job id", args: at("inspect", "j k"), code: 2, parts: []string{"job_id"}},
		{name: "migrate without schema", args: []string{"--dsn", pgtest.DSN(), "migrate"}, code: 2, parts: []string{"--schema"}},
		{name: "bad schema", args: []string{"--dsn", pgtest.DSN(), "--schema", "Public", "report", "j"}, code: 2, parts: []string{"schema", "Public"}},
		{name: "system schema", args: []string{"--dsn", pgtest.DSN(), "--schema", "information_schema", "migrate"}, code: 2,
			parts: []string{"schema: information_schema belongs to the system"}},
		{name: "pg_ schema", args: []string{"--dsn", pgtest.DSN(), "--schema", "pg_catalog", "migrate"}, code: 2,
			parts: []string{"schema: pg_catalog belongs to the system"}},
		{name: "keyword schema select", args: []string{"--dsn", pgtest.DSN(), "--schema", "select", "migrate"}, code: 2,
			parts: []string{"schema: select is a reserved SQL keyword"}},
		{name: "keyword schema user", args: []string{"--dsn", pgtest.DSN(), "migrate", "--schema", "user"}, code: 2,
			parts: []string{"schema: user is a reserved SQL keyword"}},
		{name: "bad dsn", args: []string{"--dsn", "host=127.0.0.1 port=notanumber", "--schema", j.lab.Name, "run", "j"}, code: 2, parts: []string{"dsn"}},

		// Conflicts: 3.
		{name: "register another plan", args: at("register", "-"), code: 3, parts: []string{"job j"},
			stdin: `{"job_id": "j", "tenant": "alien-desert", "targets": [{"id": 101, "revision": 0, "qty": 1}], "chunk_size": 4, "allow_partial": true}`},
		{name: "report unknown job", args: at("report", "nope"), code: 3, parts: []string{"job nope: not found"}},
		{name: "run unknown job", args: at("run", "--json", "nope"), code: 3, parts: []string{"job nope: not found"}},
		{name: "drain unknown job", args: at("drain", "nope"), code: 3, parts: []string{"job nope: not found"}},
		{name: "drain unknown job json", args: at("drain", "--json", "--workers", "2", "nope"), code: 3, parts: []string{"job nope: not found"}},

		// Runtime errors: 1.
		{name: "unreachable inspect", args: bad("inspect", "j"), code: 1, parts: []string{"127.0.0.1"}},
		{name: "unreachable run", args: bad("run", "--json", "j"), code: 1, parts: []string{"127.0.0.1"}},
		{name: "unreachable drain", args: bad("drain", "--json", "j"), code: 1, parts: []string{"127.0.0.1"}},
		{name: "unreachable report", args: bad("report", "j"), code: 1, parts: []string{"127.0.0.1"}},
		{name: "unreachable register", args: bad("register", "-"), stdin: samePlan("0"), code: 1, parts: []string{"127.0.0.1"}},
		{name: "unreachable migrate", args: bad("migrate"), code: 1, parts: []string{"127.0.0.1"}},
	}
	before := j.state(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := clitest.RunWith(t, clitest.Options{Stdin: c.stdin}, c.args...)
			wantFailure(t, r, c.code, c.parts...)
			if c.match != "" && !regexp.MustCompile(c.match).MatchString(r.Stderr) {
				t.Fatalf("want stderr to match %s, got %v", c.match, r)
			}
		})
	}
	if after := j.state(t); !reflect.DeepEqual(after, before) {
		t.Fatalf("the failed commands changed the database:\nbefore %+v\nafter  %+v", before, after)
	}
	var strays int // what the refused migrates would have made
	if err := j.lab.Conn.QueryRow(ctx, `select (select count(*) from pg_namespace where nspname in ('select', 'user'))
		+ (select count(*) from pg_class where relnamespace in ('information_schema'::regnamespace, 'pg_catalog'::regnamespace)
		   and relname in ('jobs', 'job_audit', 'orders', 'job_queue', 'schema_version'))`).Scan(&strays); err != nil || strays != 0 {
		t.Fatalf("the refused migrates left %d objects (%v)", strays, err)
	}
	var jobs int
	if err := j.lab.Conn.QueryRow(ctx, "select count(*) from jobs").Scan(&jobs); err != nil || jobs != 1 {
		t.Fatalf("%d jobs after the failed commands, want 1 (%v)", jobs, err)
	}

	// Many workers that fail the same way say it once.
	t.Run("workers say it once", func(t *testing.T) {
		for _, args := range [][]string{at("drain", "--max-chunks", "65", "j"), at("drain", "nope"), bad("drain", "j")} {
			one := clitest.Run(t, args...)
			three := clitest.Run(t, append(append([]string{}, args[:len(args)-1]...), "--workers", "3", args[len(args)-1])...)
			if three.Code != one.Code || three.Stderr != one.Stderr || three.Stdout != "" {
				t.Errorf("with --workers 3:\n%v\nwith one worker:\n%v", three, one)
			}
		}
	})
}

// TestRunConflictNamesOrder: a job whose next order was paid meanwhile is a
// conflict (exit 3) that names the order; nothing of that chunk is written.
func TestRunConflictNamesOrder(t *testing.T) {
	t.Parallel()
	j := seedJob(t, newLab(t), "j", 10, 4)
	wantJSON(t, j.lab.Chunks(t, "run", "--json", "j"), driver.ChunkResult{Processed: j.ids(0, 4), NextIndex: 4})
	paid := j.Targets[4].ID
	j.lab.Exec(t, "update orders set state = 'paid', revision = revision + 1 where id = $1", paid)
	for i := range j.orders {
		if j.orders[i].ID == paid {
			j.orders[i].State, j.orders[i].Revision = "paid", j.orders[i].Revision+1
		}
	}
	message := fmt.Sprintf("order %d: state is paid", paid)
	wantFailure(t, j.lab.Chunks(t, "run", "j"), 3, message)
	wantFailure(t, j.lab.Chunks(t, "run", "--json", "j"), 3, message)
	wantFailure(t, j.lab.Chunks(t, "drain", "--json", "j"), 3, message)
	j.wantState(t, 4)
}

// TestLongArgumentsAreExcerpted: a huge value typed on the command line
// comes back in the error as a short excerpt and a length.
func TestLongArgumentsAreExcerpted(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100_000) // argv takes at most 128 KiB per argument
	g := []string{"--dsn", unreachableDSN, "--schema", "lab"}
	for _, c := range []struct {
		name  string
		args  []string
		parts []string
	}{
		{"job id", append(g, "inspect", long), []string{"job_id", "got 100000 characters"}},
		{"flag after the job id", append(g, "report", "j", "-"+long), []string{`flag -xxx`, "… (100001 characters) after the job id"}},
		{"two jobs", append(g, "report", "j", long), []string{"takes one JOB argument, got 2: j xxx", "… (100002 characters)"}},
		{"crash point", append(g, "run", "--crash-at", long, "j"), []string{`--crash-at "xxx`, `"… (100000 characters): POINT must be one of`}},
		{"unknown command", append(g, long), []string{`unknown command "xxx`, `"… (100000 characters)`}},
		{"unknown flag", append(g, "report", "--"+long, "j"), []string{"flag provided but not defined: -", "characters)"}},
		{"schema", []string{"--dsn", unreachableDSN, "--schema", long, "report", "j"}, []string{`schema: must be a lowercase identifier`, `"… (100000 characters)`}},
		{"migrate argument", append(g, "migrate", long), []string{`migrate takes no arguments, got ["xxx`, "characters)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := clitest.Run(t, c.args...)
			wantFailure(t, r, 2, c.parts...)
			if len(r.Stderr) > 400 {
				t.Fatalf("the error is %d bytes long:\n%.500s", len(r.Stderr), r.Stderr)
			}
		})
	}
}
