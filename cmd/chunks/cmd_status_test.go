package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

func TestStatusOptions(t *testing.T) {
	if got := parsed(t, parseStatus, "status"); *got != (statusOptions{}) {
		t.Errorf("got %+v", got)
	}
	if got := parsed(t, parseStatus, "status", "--all"); *got != (statusOptions{All: true}) {
		t.Errorf("got %+v", got)
	}
	wantExit(t, chunksIn(t, nil, "", "status", "j1"), 2, `status takes no arguments, got ["j1"]`)
}

func TestStatusRun(t *testing.T) {
	l := clitest.NewLab(t)
	d := labDeps(l)
	wantRunOut(t, runStatus, d, &statusOptions{}, "no jobs\nno live workers\n")
	wantRunOut(t, runStatus, d, &statusOptions{All: true}, "no jobs\nno live workers\n")
	newJob(t, l, "j1", "acme", 3, 3)
	runChunk(t, l, "j1")
	l.Exec(t, "update orders set qty = 5 where id = 2")
	l.Exec(t, "delete from orders where id = 3")
	l.Exec(t, `insert into orders (id, tenant, qty, state, revision) values (4, 'beta', 1, 'pending', 1)`)
	if _, err := driver.Register(ctx, l.Conn, driver.Plan{JobID: "j2", Tenant: "beta", ChunkSize: 1, AllowPartial: true,
		Targets: []driver.Target{{ID: 4, Revision: 1, Qty: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := (driver.JobRef{ID: "j1"}).RegisterUndo(ctx, l.Conn, ""); err != nil {
		t.Fatal(err)
	}
	want := "┌─────────┬────────────┬────────┬──────────┬────────┬───────────────────┬───────┬──────┬─────────────┐\n" +
		"│ JOB     │ KIND       │ TENANT │ PROGRESS │ STATE  │ DETAIL            │ DRIFT │ RATE │ ETA         │\n" +
		"├─────────┼────────────┼────────┼──────────┼────────┼───────────────────┼───────┼──────┼─────────────┤\n" +
		"│ j1      │ cancel     │ acme   │ 3/3      │ done   │ undone by j1-undo │ 2     │ -    │ done        │\n" +
		"│ j1-undo │ undo of j1 │ acme   │ 0/1      │ queued │                   │ 0     │ -    │ no rate yet │\n" +
		"│ j2      │ cancel     │ beta   │ 0/1      │ queued │                   │ 0     │ -    │ no rate yet │\n" +
		"└─────────┴────────────┴────────┴──────────┴────────┴───────────────────┴───────┴──────┴─────────────┘\n" +
		"3 jobs: 2 queued, 1 done; 2 rows drifted or missing\n" +
		"no live workers\n"
	if got := wantRun(t, runStatus, d, &statusOptions{All: true}); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	st := statusJSON(t, d)
	if len(st.Jobs) != 3 || len(st.Workers) != 0 || st.Schema.Compare != "same" || st.Schema.Database == nil ||
		*st.Schema.Database != driver.SchemaVersion() || st.Schema.Binary != driver.SchemaVersion() {
		t.Fatalf("--json: %+v", st)
	}
	if j := st.Jobs[0]; j.JobID != "j1" || j.State != fleet.StateDone || j.Drift == nil || *j.Drift != 2 || j.UndoneBy == nil || *j.UndoneBy != "j1-undo" {
		t.Errorf("--json, j1: %+v", j)
	}
	if j := st.Jobs[1]; j.JobID != "j1-undo" || j.Kind != driver.KindRestore || j.Undoes == nil || *j.Undoes != "j1" || j.N != 1 || j.VisibleAt == nil {
		t.Errorf("--json, j1-undo: %+v", j)
	}
}

// A job of a declared change shows its change: "change NAME" in the kind
// column, "change" in --json (null for other jobs).
func TestStatusShowsTheChange(t *testing.T) {
	l := clitest.NewLab(t)
	shop := userTables(t, l)
	d := labDeps(l)
	l.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	l.Exec(t, "select register_change('hold_payment', $1)", holdPlan("p1", 2, 1, 2, 3))
	runChunk(t, l, "p1")
	newJob(t, l, "j1", "acme", 2, 2)
	want := "┌─────┬─────────────────────┬────────┬──────────┬────────┬────────┬───────┬──────┬─────────────┐\n" +
		"│ JOB │ KIND                │ TENANT │ PROGRESS │ STATE  │ DETAIL │ DRIFT │ RATE │ ETA         │\n" +
		"├─────┼─────────────────────┼────────┼──────────┼────────┼────────┼───────┼──────┼─────────────┤\n" +
		"│ j1  │ cancel              │ acme   │ 0/2      │ queued │        │ 0     │ -    │ no rate yet │\n" +
		"│ p1  │ change hold_payment │ 7      │ 2/3      │ queued │        │ 0     │ -    │ no rate yet │\n" +
		"└─────┴─────────────────────┴────────┴──────────┴────────┴────────┴───────┴──────┴─────────────┘\n" +
		"2 jobs: 2 queued; 0 rows drifted or missing\n" +
		"no live workers\n"
	if got := wantRun(t, runStatus, d, &statusOptions{All: true}); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	st := statusJSON(t, d)
	if len(st.Jobs) != 2 || st.Jobs[0].Change != nil || st.Jobs[1].Kind != driver.KindChange || st.Jobs[1].Change == nil || *st.Jobs[1].Change != "hold_payment" {
		t.Errorf("--json: %+v", st.Jobs)
	}
	// Drift of a declared change's job, as report counts it (issue 35, item 20: it was "?").
	l.Exec(t, "update "+shop+".payments set status = 'refunded' where payment_id = 1")
	if st := statusJSON(t, d); len(st.Jobs) != 2 || st.Jobs[1].Drift == nil || *st.Jobs[1].Drift != 1 {
		t.Errorf("--json after payment 1 drifted: %+v", st.Jobs)
	}
	l.Exec(t, "update "+shop+".payments set status = 'on_hold' where payment_id = 1")

	// Its undo is kind restore, as an orders job's undo is, and keeps the
	// change's name: "undo of p1 (change hold_payment)".
	wantOut(t, chunksIn(t, l, "", "pause", "p1"), "paused job p1: no worker starts a chunk of it until chunks resume p1\n")
	wantOut(t, chunksIn(t, l, "", "undo", "--json", "p1"),
		`{"job_id":"p1-undo","undoes":"p1","created":true,"change":"hold_payment","targets":[1,2],"drifted":[],"missing":[]}`+"\n")
	if got, want := wantRun(t, runStatus, d, &statusOptions{All: true}), "│ p1-undo │ undo of p1 (change hold_payment) │ 7      │ 0/2      │ queued │"; !strings.Contains(got, want) {
		t.Errorf("status of the undo: got\n%s\nwant a row %s", got, want)
	}
	st = statusJSON(t, d)
	if len(st.Jobs) != 3 || st.Jobs[2].JobID != "p1-undo" || st.Jobs[2].Kind != driver.KindRestore || st.Jobs[2].Change == nil ||
		*st.Jobs[2].Change != "hold_payment" || st.Jobs[2].Undoes == nil || *st.Jobs[2].Undoes != "p1" ||
		st.Jobs[1].UndoneBy == nil || *st.Jobs[1].UndoneBy != "p1-undo" || st.Jobs[1].Kind != driver.KindChange {
		t.Errorf("--json with the undo: %+v", st.Jobs)
	}
	for job, want := range map[string]driver.JobLineage{
		"p1":      {JobID: "p1", Kind: driver.KindChange, Change: ptr("hold_payment"), UndoneBy: ptr("p1-undo")},
		"p1-undo": {JobID: "p1-undo", Kind: driver.KindRestore, Change: ptr("hold_payment"), Undoes: ptr("p1")},
		"j1":      {JobID: "j1", Kind: driver.KindCancel},
	} {
		if got, err := (driver.JobRef{ID: job}).Lineage(ctx, l.Conn); err != nil || got == nil || clitest.MustJSON(t, got) != clitest.MustJSON(t, want) {
			t.Errorf("lineage of %s: %+v, %v; want %+v", job, got, err, want)
		}
	}
	wantOut(t, chunksIn(t, l, "", "run", "p1-undo"), "job p1-undo: restored 1-2 to the values from before p1; next_index 2; the job is done\n")
}

// statusJSON is what chunks status --json prints.
func statusJSON(t testing.TB, d deps) (st struct {
	Jobs    []fleet.JobStatus    `json:"jobs"`
	Workers []fleet.WorkerStatus `json:"workers"`
	Schema  fleet.SchemaVersions `json:"schema_version"`
}) {
	t.Helper()
	d.json = true
	decodeJSON(t, wantRun(t, runStatus, d, &statusOptions{All: true}), &st)
	return st
}

// The summary (chunks status without --all) on one screen: the counts,
// the unfinished campaigns (five, then how many more), the jobs waiting
// for a person with why (not those of a paused campaign), the workers.
// 12 campaigns of 3 jobs each (one waiting its turn) take 22 lines.
func TestStatusSummary(t *testing.T) {
	l := clitest.NewLab(t)
	d := labDeps(l)
	l.Exec(t, "insert into orders (id, tenant, qty, state, revision) select g, 'acme', 1, 'pending', 1 from generate_series(1, 1800) g")
	for i := range 12 {
		l.Exec(t, "select campaign_create($1, 'acme', 10, array(select g from generate_series($2::integer, $2 + 149) g), array_fill(1, array[150]), array_fill(1, array[150]), 2)",
			fmt.Sprintf("c%02d", i+1), i*150+1)
	}
	l.Exec(t, "update orders set qty = 9 where id = 1655") // c12's first chunk cannot run
	l.Exec(t, "select run_next_chunk('w1') from generate_series(1, 30)")
	l.Exec(t, "select campaign_pause('c10')")
	l.Exec(t, "select worker_heartbeat('w1', 'host-a', 41, now() - interval '1 minute', 30, 'running', null)")
	got := wantRun(t, runStatus, d, &statusOptions{})
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 22 || !clitest.ContainsAll(got,
		"36 jobs: ", " queued, 3 paused, 12 idle; ", " targets not yet committed",
		"│ c12      │ queued │ ", "│ c10      │ paused │ ", "none: the campaign is paused (chunks campaign resume)",
		"(7 unfinished campaigns not listed: chunks campaign status NAME)",
		"waiting for a person:", "│ c12-000001 │ c12      │", "│ w1 │ order 1655: qty is 9, approved 1 │",
		"│ w1     │ host-a │") || strings.Contains(got, "c10-000001") || strings.Contains(got, "c01 ") {
		t.Errorf("summary (%d lines):\n%s", len(lines), got)
	}
}
