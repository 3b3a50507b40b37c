package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// drift changes three committed orders of a finished job j: the 4th
// target's qty, the 18th is re-opened, the 26th deleted. It returns their
// ids (drifted, drifted, missing).
func (j *job) drift(t testing.TB) [3]int64 {
	t.Helper()
	ids := [3]int64{j.Targets[3].ID, j.Targets[17].ID, j.Targets[25].ID}
	j.lab.Exec(t, "update orders set qty = qty + 1, revision = revision + 1 where id = $1", ids[0])
	j.lab.Exec(t, "update orders set state = 'pending', revision = revision + 1 where id = $1", ids[1])
	j.lab.Exec(t, "delete from orders where id = $1", ids[2])
	return ids
}

// seedUndo seeds a job "festival" of n targets, drains it with chunks
// drain, drifts three of its orders and registers its undo with chunks
// undo: the returned job is the undo, registered and not run yet, with
// every order as it is now.
func seedUndo(t testing.TB, l *lab, n, chunkSize int) *job {
	t.Helper()
	j := seedJob(t, l, "festival", n, chunkSize)
	j.drainToEnd(t, 0)
	drifted := j.drift(t)
	u := &job{lab: l, ID: "festival-undo", Tenant: j.Tenant, ChunkSize: chunkSize, after: "pending", table: j.table}
	var restored []int64
	for _, target := range j.Targets {
		if !slices.Contains(drifted[:], target.ID) {
			u.Targets = append(u.Targets, driver.Target{ID: target.ID, Revision: target.Revision + 1, Qty: target.Qty})
			restored = append(restored, target.ID)
		}
	}
	// An orders job's undo lists order ids (driver.Undo's keys are numbers).
	type ordersUndo struct {
		JobID   string  `json:"job_id"`
		Undoes  string  `json:"undoes"`
		Created bool    `json:"created"`
		Targets []int64 `json:"targets"`
		Drifted []int64 `json:"drifted"`
		Missing []int64 `json:"missing"`
	}
	wantJSON(t, l.Chunks(t, "undo", "--json", "festival"), ordersUndo{JobID: "festival-undo", Undoes: "festival", Created: true,
		Targets: restored, Drifted: drifted[:2], Missing: drifted[2:]})
	u.orders = u.state(t).Orders
	u.wantState(t, 0)
	return u
}

// writePlan writes a plan of jobID for j's tenant and targets (in
// descending id order) to a file and returns its path.
func writePlan(t testing.TB, j *job, jobID string, chunkSize int) string {
	t.Helper()
	reversed := slices.Clone(j.Targets)
	slices.Reverse(reversed)
	plan, err := json.Marshal(map[string]any{"job_id": jobID, "tenant": j.Tenant, "targets": reversed, "chunk_size": chunkSize, "allow_partial": true})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), jobID+".json")
	if err := os.WriteFile(file, plan, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestCheck: chunks check says, for each target, whether it would be
// cancelled now or why not, and whether the job id is free, registered with
// this approval or taken: exit 0 when all would apply, 3 when not, 2 for an
// invalid plan; --json gives the struct; nothing is written.
func TestCheck(t *testing.T) {
	t.Parallel()
	j := seedJob(t, newLab(t), "festival", 12, 4)
	same, second, other := writePlan(t, j, "festival", 4), writePlan(t, j, "second", 4), writePlan(t, j, "festival", 3)
	before := j.state(t)

	if out := wantOK(t, j.lab.Chunks(t, "check", same)); out != "job festival: already registered with this approval; register would change nothing\n"+
		"12 of 12 targets would be cancelled now; 0 would not\n" {
		t.Fatalf("check of the registered plan:\n%s", out)
	}
	data, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	all := driver.PlanCheck{JobID: "second", OK: true, Job: driver.JobFree}
	for _, target := range j.Targets {
		all.Targets = append(all.Targets, driver.TargetCheck{ID: target.ID, OK: true})
	}
	wantJSON(t, clitest.RunWith(t, clitest.Options{Stdin: string(data)}, append(j.lab.Globals(), "check", "--json", "-")...), all)
	// The three checks so far wrote nothing: no job second, festival as it was.
	if after := j.state(t); !reflect.DeepEqual(after, before) {
		t.Fatalf("check changed the database:\n%+v\n%+v", before, after)
	}
	var jobs int
	if err := j.lab.Conn.QueryRow(ctx, "select count(*) from jobs where job_id = 'second'").Scan(&jobs); err != nil || jobs != 0 {
		t.Fatalf("check of a free id created the job: %d rows (%v)", jobs, err)
	}

	// Two orders changed: exit 3, the table names them, one line on stderr.
	gone, moved := j.Targets[1], j.Targets[5]
	j.lab.Exec(t, "delete from orders where id = $1", gone.ID)
	j.lab.Exec(t, "update orders set revision = revision + 2 where id = $1", moved.ID)
	before = j.state(t)
	r := j.lab.Chunks(t, "check", second)
	wantErrorLine(t, r, "conflict: check: job second: 2 of 12 targets would not be cancelled")
	for _, want := range []string{"job second: the id is free; register would create the job",
		fmt.Sprintf("order %d: missing", gone.ID), fmt.Sprintf("order %d: revision is %d, approved %d", moved.ID, moved.Revision+2, moved.Revision),
		"10 of 12 targets would be cancelled now; 2 would not"} {
		if r.Code != 3 || !strings.Contains(r.Stdout, want) {
			t.Fatalf("want exit 3 and %q on stdout, got %v", want, r)
		}
	}
	r = j.lab.Chunks(t, "check", "--json", second)
	if r.Code != 3 {
		t.Fatalf("check --json of a plan that would not apply: %v", r)
	}
	got := decode[driver.PlanCheck](t, clitest.Result{Stdout: r.Stdout})
	if got.OK || len(got.Problems()) != 2 || got.Problems()[0].ID != gone.ID || got.Problems()[1].Problem !=
		fmt.Sprintf("order %d: revision is %d, approved %d", moved.ID, moved.Revision+2, moved.Revision) {
		t.Fatalf("check --json: %+v", got)
	}

	// A conflicting registration: exit 3 even if every target were fine.
	r = j.lab.Chunks(t, "check", other)
	wantErrorLine(t, r, "conflict: check: job festival: 2 of 12 targets would not be cancelled; registering would conflict")
	if r.Code != 3 || !strings.Contains(r.Stdout, "job festival: register would refuse: job festival: already registered with chunk_size 4, not 3") {
		t.Fatalf("check of a conflicting plan: %v", r)
	}
	// register + drain conflict where check said.
	wantOK(t, j.lab.Chunks(t, "register", second))
	if got := j.lab.Chunks(t, "drain", "second"); got.Code != 3 || !strings.Contains(got.Stderr, fmt.Sprintf("order %d: missing", gone.ID)) {
		t.Fatalf("drain after an exit-3 check: %v", got)
	}
	j.lab.Exec(t, "delete from job_queue where job_id = 'second'")
	j.lab.Exec(t, "delete from jobs where job_id = 'second'")

	// Invalid: exit 2, nothing on stdout, before any database.
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"job_id": "x", "tenant": "t", "targets": [], "chunk_size": 1, "allow_partial": true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	wantFailure(t, clitest.Run(t, "--dsn", unreachableDSN, "check", bad), 2, "invalid: targets: must be a list of 1 to 64 targets, got 0")
	wantFailure(t, j.lab.Chunks(t, "check", second, "--json"), 2, "flag --json after PLAN.json")
	if after := j.state(t); !reflect.DeepEqual(after, before) {
		t.Fatalf("check changed the database:\n%+v\n%+v", before, after)
	}
}

// TestUndo: chunks undo registers the undo of a finished job; it is
// drained like any other job and restores exactly the orders that were
// still as the job left them, once; the reports and the status name both.
func TestUndo(t *testing.T) {
	t.Parallel()
	u := seedUndo(t, newLab(t), 40, 10)
	again := u.lab.Chunks(t, "undo", "festival")
	if out := wantOK(t, again); !strings.HasPrefix(out, "job festival-undo was already registered as the undo of festival; nothing changed (it restores 37 orders)\n") ||
		!strings.Contains(out, "left alone (changed since festival, or gone): drifted ") {
		t.Fatalf("undo again:\n%s", out)
	}
	u.wantState(t, 0)

	st := decode[struct {
		Jobs    []fleet.JobStatus    `json:"jobs"`
		Workers []fleet.WorkerStatus `json:"workers"`
		Schema  fleet.SchemaVersions `json:"schema_version"`
	}](t, u.lab.Chunks(t, "status", "--json")).Jobs
	if len(st) != 2 || st[0].Kind != driver.KindCancel || st[0].UndoneBy == nil || *st[0].UndoneBy != "festival-undo" ||
		st[1].Kind != driver.KindRestore || st[1].Undoes == nil || *st[1].Undoes != "festival" || st[1].State != fleet.StateQueued {
		t.Fatalf("status --json: %+v", st)
	}
	status := wantOK(t, u.lab.Chunks(t, "status", "--all"))
	if !strings.Contains(status, "undo of festival") || !strings.Contains(status, "undone by festival-undo") {
		t.Fatalf("status:\n%s", status)
	}

	u.drainToEnd(t, 0)
	report := wantOK(t, u.lab.Chunks(t, "report", "festival-undo"))
	if !strings.Contains(report, "job festival-undo: 37 approved, 37 committed, 0 remaining: 37 matching, 0 drifted, 0 missing\n") ||
		!strings.HasSuffix(report, "job festival-undo is the undo of festival: matching orders are pending again, as they were before festival\n") {
		t.Fatalf("report of the undo:\n%s", report)
	}
	report = wantOK(t, u.lab.Chunks(t, "report", "festival"))
	if !strings.HasSuffix(report, "job festival: 40 approved, 40 committed, 0 remaining: 0 matching, 39 drifted, 1 missing\n"+
		"job festival was undone by festival-undo (chunks report festival-undo shows what it restored)\n") {
		t.Fatalf("report of the undone job:\n%s", report)
	}
	wantJSON(t, u.lab.Chunks(t, "report", "--json", "festival-undo"), driver.JobReport{
		Approved: u.ids(0, 37), Committed: u.ids(0, 37), Remaining: []int64{}, Matching: u.ids(0, 37), Drifted: []int64{}, Missing: []int64{},
	})
	// Done: draining again changes nothing.
	u.drainToEnd(t, 37)
}

// TestUndoRefusals: every refusal of chunks undo is a conflict (exit 3)
// or, for a bad id, invalid input (exit 2), with one line on stderr and
// nothing written.
func TestUndoRefusals(t *testing.T) {
	t.Parallel()
	u := seedUndo(t, newLab(t), 30, 4)
	plan := filepath.Join(t.TempDir(), "running.json")
	u.lab.Exec(t, `insert into orders values (9001, 'alien-desert', 1, 'pending', 0), (9002, 'alien-desert', 1, 'pending', 0)`)
	if err := os.WriteFile(plan, []byte(`{"job_id": "running", "tenant": "alien-desert", "chunk_size": 1, "allow_partial": true,
		"targets": [{"id": 9001, "revision": 0, "qty": 1}, {"id": 9002, "revision": 0, "qty": 1}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	wantOK(t, u.lab.Chunks(t, "register", plan))
	wantOK(t, u.lab.Chunks(t, "run", "running"))
	before := u.state(t)
	long := strings.Repeat("j", 60)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"undo", "nope"}, 3, "conflict: job nope: not found"},
		{[]string{"undo", "festival-undo"}, 3, "conflict: job festival-undo: is the undo of festival; an undo is not undone"},
		{[]string{"undo", "--job-id", "again", "festival"}, 3, "conflict: job festival: already undone by festival-undo"},
		{[]string{"undo", "running"}, 3, "conflict: job running: can still make progress (next_index 1 of 2, not paused): pause it first (chunks pause running)"},
		{[]string{"undo", "--job-id", "festival", "running"}, 3, "conflict: job festival: already registered, and not as the undo of running"},
		{[]string{"undo", "--job-id", "a b", "festival"}, 2, `invalid: new_job_id: must be 1 to 64 ASCII letters, digits, _ or -, got "a b"`},
		{[]string{"undo", long}, 2, "invalid: new_job_id: job " + long + " is 60 characters, too long to name its undo"},
		{[]string{"undo", "festival", "--job-id", "x"}, 2, "usage: flag --job-id after the job id"},
	} {
		wantFailure(t, u.lab.Chunks(t, c.args...), c.code, c.msg)
	}
	if after := u.state(t); !reflect.DeepEqual(after, before) {
		t.Fatalf("the refusals changed the database")
	}
	// Paused, the job can be undone; then resume and pause --after refuse it.
	wantOK(t, u.lab.Chunks(t, "pause", "running"))
	if out := wantOK(t, u.lab.Chunks(t, "undo", "running")); out != "registered job running-undo, the undo of running: it restores 1 order to pending, 9001\n" {
		t.Fatalf("undo of the paused job: %q", out)
	}
	wantFailure(t, u.lab.Chunks(t, "resume", "running"), 3, "conflict: job running: undone by running-undo; nothing to resume")
	wantFailure(t, u.lab.Chunks(t, "pause", "--after", "1", "running"), 3, "conflict: job running: undone by running-undo; nothing to run")
}

// TestTwoDrainProcessesOnAnUndo: two chunks drain processes on one undo at
// the same moment change each of its orders exactly once, and the ids they
// report together are the undo's audit.
func TestTwoDrainProcessesOnAnUndo(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 3} {
		t.Run(fmt.Sprintf("chunk_size=%d", size), func(t *testing.T) {
			t.Parallel()
			u := seedUndo(t, newLab(t), 64, size)
			n := len(u.Targets)
			all, _ := twoDrains(t, u.lab.Lab, u.ID, n)
			slices.Sort(all)
			if want := u.ids(0, n); !reflect.DeepEqual(all, want) {
				t.Fatalf("the two drains reported %v together, want each of %v once", all, want)
			}
			u.wantAuditIDs(t, all)
			u.wantState(t, n)
		})
	}
}

// TestPauseAfterCLI: chunks pause --after N, its status line, its JSON and
// its refusals.
func TestPauseAfterCLI(t *testing.T) {
	t.Parallel()
	j := seedJob(t, newLab(t), "festival", 12, 2) // 6 chunks
	if out := wantOK(t, j.lab.Chunks(t, "pause", "--after", "2", "festival")); out !=
		"job festival: the workers run 2 more chunks of it, then it pauses itself until chunks resume festival\n" {
		t.Fatalf("pause --after: %q", out)
	}
	if out := wantOK(t, j.lab.Chunks(t, "pause", "--after", "2", "--json", "festival")); out != `{"after":2,"changed":false,"job_id":"festival"}`+"\n" {
		t.Fatalf("pause --after again: %q", out)
	}
	if out := wantOK(t, j.lab.Chunks(t, "status", "--all")); !strings.Contains(out, "pauses after 2 more chunks") {
		t.Fatalf("status:\n%s", out)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"pause", "--after", "6", "festival"}, 3, "conflict: job festival: only 6 chunks left (next_index 0 of 12, 2 per chunk): after 6 it would be done, not paused"},
		{[]string{"pause", "--after", "0", "festival"}, 2, "invalid: after: must be between 1 and 10000 chunks, got 0"},
		{[]string{"pause", "--after", "x", "festival"}, 2, "usage:"},
		{[]string{"pause", "--after", "1", "nope"}, 3, "conflict: job nope: not found"},
	} {
		wantFailure(t, j.lab.Chunks(t, c.args...), c.code, c.msg)
	}
	j.wantState(t, 0)
}
