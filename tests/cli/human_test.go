package cli

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// reportRow is a row of the report's table: an order id and its status.
var reportRow = regexp.MustCompile(`(?m)^│\s*(\d+)\s*│\s*(\w+)\s*│$`)

// TestReportHuman: without --json, report prints each committed id with its
// status and a one-line summary.
func TestReportHuman(t *testing.T) {
	t.Parallel()
	j := seedJob(t, newLab(t), "human", 10, 4)
	wantJSON(t, j.lab.Chunks(t, "drain", "--json", "--max-chunks", "2", j.ID),
		driver.DrainResult{Calls: 2, Processed: j.ids(0, 8), NextIndex: 8})

	drifted, reopened, missing := j.Targets[1].ID, j.Targets[6].ID, j.Targets[5].ID
	j.lab.Exec(t, "update orders set qty = qty + 1, revision = revision + 1 where id = $1", drifted)
	j.lab.Exec(t, "update orders set state = 'pending', revision = revision + 1 where id = $1", reopened)
	j.lab.Exec(t, "delete from orders where id = $1", missing)

	out := wantOK(t, j.lab.Chunks(t, "report", j.ID))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	summary := "job human: 10 approved, 8 committed, 2 remaining: 5 matching, 2 drifted, 1 missing"
	if last := lines[len(lines)-1]; last != summary {
		t.Fatalf("summary line %q, want %q\n%s", last, summary, out)
	}
	got := map[int64]string{}
	for _, m := range reportRow.FindAllStringSubmatch(out, -1) {
		id, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := got[id]; dup {
			t.Fatalf("order %d is listed twice:\n%s", id, out)
		}
		got[id] = m[2]
	}
	want := map[int64]string{}
	for _, id := range j.ids(0, 8) {
		want[id] = "matching"
	}
	want[drifted], want[reopened], want[missing] = "drifted", "drifted", "missing"
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("table rows %v, want %v (the 8 committed ids only)\n%s", got, want, out)
	}

	// The same facts as --json.
	wantJSON(t, j.lab.Chunks(t, "report", "--json", j.ID), driver.JobReport{
		Approved: j.ids(0, 10), Committed: j.ids(0, 8), Remaining: j.ids(8, 10),
		Matching: []int64{j.Targets[0].ID, j.Targets[2].ID, j.Targets[3].ID, j.Targets[4].ID, j.Targets[7].ID},
		Drifted:  []int64{drifted, reopened}, Missing: []int64{missing},
	})

	// A job with nothing committed yet: no table, only the summary.
	plan := fmt.Sprintf(`{"job_id": "untouched", "tenant": %q, "targets": [{"id": %d, "revision": %d, "qty": %d}], "chunk_size": 1, "allow_partial": true}`,
		j.Tenant, j.Targets[9].ID, j.Targets[9].Revision, j.Targets[9].Qty)
	wantOK(t, clitest.RunWith(t, clitest.Options{Stdin: plan}, append(j.lab.Globals(), "register", "-")...))
	want1 := "job untouched: 1 approved, 0 committed, 1 remaining: 0 matching, 0 drifted, 0 missing\n"
	if out := wantOK(t, j.lab.Chunks(t, "report", "untouched")); out != want1 {
		t.Fatalf("report of an untouched job:\n%s\nwant\n%s", out, want1)
	}
}

// TestHumanOutputEscapes: values a person inserted by hand, with terminal
// escape sequences, a bell and a bidi override (a job id, a tenant, the
// worker that paused a job), reach neither stdout nor stderr raw in human
// output: status, inspect, and an error that quotes a stored value. Each is
// shown escaped instead.
func TestHumanOutputEscapes(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	evilJob, evilTenant, evilWorker := "clear\x1b[2J", "\u202eacme", "w\x1b]0;owned\x07"
	l.Exec(t, `insert into orders values (1, 'acme', 1, 'pending', 0)`)
	l.Exec(t, `insert into jobs values ($1, 'acme', '[{"id": 1, "qty": 1, "revision": 0}]', 1, 0),
		('plain', $2, '[{"id": 1, "qty": 1, "revision": 0}]', 1, 0)`, evilJob, evilTenant)
	l.Exec(t, `insert into job_queue (job_id, visible_at, paused, pause_reason, paused_at, paused_by)
		values ($1, now(), true, 'order 1: state is paid', now(), $2)`, evilJob, evilWorker)
	l.Exec(t, `insert into workers (worker_id, host, pid, started_at, last_seen, state, reason)
		values ($1, $2, 1, now(), now(), 'throttled', $3)`, evilWorker, "host\u202e", "throttle query said \x1b[5m")
	l.Exec(t, "select pg_advisory_lock(worker_lock_key($1))", evilWorker) // alive: this session holds its lock, as a worker's would
	raw := []string{"\x1b", "\x07", "\u202e"}
	wantEscaped := func(r clitest.Result, escaped ...string) {
		t.Helper()
		for _, c := range raw {
			if strings.Contains(r.Stdout+r.Stderr, c) {
				t.Fatalf("%q reaches the terminal raw:\n%q", c, r.Stdout+r.Stderr)
			}
		}
		for _, e := range escaped {
			if !strings.Contains(r.Stdout+r.Stderr, e) {
				t.Fatalf("want %s in the output, got:\n%s%s", e, r.Stdout, r.Stderr)
			}
		}
	}
	status := l.Chunks(t, "status", "--all")
	wantOK(t, status)
	wantEscaped(status, `clear\x1b[2J`, `\u202eacme`, `w\x1b]0;owned\x07`, `host\u202e`, `throttle query said \x1b[5m`)

	inspect := l.Chunks(t, "inspect", "plain")
	wantOK(t, inspect)
	wantEscaped(inspect, `job plain of tenant \u202eacme:`)

	run := l.Chunks(t, "run", "plain") // the stored tenant is not valid: a conflict that quotes it
	wantFailure(t, run, 3, "stored tenant")
	wantEscaped(run, `\u202eacme`)
}
