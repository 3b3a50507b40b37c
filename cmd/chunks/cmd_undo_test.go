package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

func TestUndoOptions(t *testing.T) {
	if got, want := *parsed(t, parseUndo, "undo", "--job-id", "back", "--tenant", "acme", "j1"),
		(undoOptions{Job: driver.JobRef{ID: "j1", Tenant: "acme"}, NewID: "back"}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	j1 := driver.JobRef{ID: "j1"}
	// The same message as driver.RegisterUndo's, before any connection.
	if err := (&undoOptions{Job: j1, NewID: "a b"}).Validate(); err.Error() != `invalid: new_job_id: must be 1 to 64 ASCII letters, digits, _ or -, got "a b"` {
		t.Errorf("got %v", err)
	}
	wantInvalid(t, &undoOptions{Job: driver.JobRef{ID: "a b"}, NewID: "back"}, "job_id")
	if err := (&undoOptions{Job: j1}).Validate(); err != nil {
		t.Errorf("no --job-id: %v", err)
	}
}

// The undo restores the orders still as the job left them, and leaves the
// others alone; its chunks restore them; the reports say how the two jobs
// are tied.
func TestUndoRun(t *testing.T) {
	l := clitest.NewLab(t)
	newJob(t, l, "j1", "acme", 3, 3)
	runChunk(t, l, "j1")
	l.Exec(t, "update orders set qty = 5 where id = 3")
	d := labDeps(l)
	o := &undoOptions{Job: driver.JobRef{ID: "j1"}}
	left := "left alone (changed since j1, or gone): drifted 3; missing none\n"
	wantRunOut(t, runUndo, d, o, "registered job j1-undo, the undo of j1: it restores 2 orders to pending, 1-2\n"+left)
	wantRunOut(t, runUndo, d, o, "job j1-undo was already registered as the undo of j1; nothing changed (it restores 2 orders)\n"+left)
	wantOut(t, chunksIn(t, l, "", "undo", "--json", "j1"),
		`{"job_id":"j1-undo","undoes":"j1","created":false,"targets":[1,2],"drifted":[3],"missing":[]}`+"\n")
	wantRunOut(t, runRun, d, &runOptions{Job: driver.JobRef{ID: "j1-undo"}}, "job j1-undo: restored 1-2 to pending; next_index 2; the job is done\n")
	if got, want := wantRun(t, runReport, d, &jobOptions{Job: driver.JobRef{ID: "j1"}}),
		"job j1 was undone by j1-undo (chunks report j1-undo shows what it restored)\n"; !strings.HasSuffix(got, want) {
		t.Errorf("report j1: got %q, want it to end %q", got, want)
	}
	if got, want := wantRun(t, runReport, d, &jobOptions{Job: driver.JobRef{ID: "j1-undo"}}),
		"job j1-undo: 2 approved, 2 committed, 0 remaining: 2 matching, 0 drifted, 0 missing\n"+
			"job j1-undo is the undo of j1: matching orders are pending again, as they were before j1\n"; !strings.HasSuffix(got, want) {
		t.Errorf("report j1-undo: got %q, want it to end %q", got, want)
	}
	wantRunErr(t, runUndo, d, &undoOptions{Job: driver.JobRef{ID: "j1-undo"}}, driver.ErrConflict, "conflict: job j1-undo: is the undo of j1; an undo is not undone (register a new job to cancel those orders again)")
}

// chunks undo of a declared change's job: it says what rows it restores by
// key (integers as ids, a uuid as it is), in text and in JSON; the undo runs
// and reports like any job; an undo of it is refused.
func TestUndoChange(t *testing.T) {
	l := clitest.NewLab(t)
	shop := userTables(t, l)
	d := labDeps(l)
	l.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	l.Exec(t, fmt.Sprintf(`select define_change('{"name": "opt_out", "table": "%s.contacts", "key": "id", "expect": ["email"], "set": {"opted_out": true}}')`, shop))
	l.Exec(t, "select register_change('hold_payment', $1)", holdPlan("p1", 2, 1, 2, 3, 4))
	wantRunErr(t, runUndo, d, &undoOptions{Job: driver.JobRef{ID: "p1"}}, driver.ErrConflict,
		"conflict: job p1: can still make progress (next_index 0 of 4, not paused): pause it first (chunks pause p1)")
	wantOut(t, chunksIn(t, l, "", "drain", "p1"), "job p1: 2 calls changed 1-4; next_index 4; the job is done\n")
	l.Exec(t, "update "+shop+".payments set status = 'refunded' where payment_id = 3")
	l.Exec(t, "delete from "+shop+".payments where payment_id = 4")

	o := &undoOptions{Job: driver.JobRef{ID: "p1", Tenant: "7"}}
	left := "left alone (changed since p1, or gone): drifted 3; missing 4\n"
	wantRunOut(t, runUndo, d, o, "registered job p1-undo, the undo of p1: it restores 2 rows to the values from before p1, 1-2\n"+left)
	wantRunOut(t, runUndo, d, o, "job p1-undo was already registered as the undo of p1; nothing changed (it restores 2 rows)\n"+left)
	wantOut(t, chunksIn(t, l, "", "undo", "--json", "p1"),
		`{"job_id":"p1-undo","undoes":"p1","created":false,"change":"hold_payment","targets":[1,2],"drifted":[3],"missing":[4]}`+"\n")
	wantOut(t, chunksIn(t, l, "", "drain", "p1-undo"), "job p1-undo: 1 call restored 1-2 to the values from before p1; next_index 2; the job is done\n")
	var got string
	if err := l.Conn.QueryRow(ctx, "select string_agg(payment_id || ':' || status || ':' || coalesce(hold_reason, '-') || ':' || lock_version, ',' order by payment_id) from "+shop+".payments").Scan(&got); err != nil ||
		got != "1:captured:-:5,2:captured:-:5,3:refunded:chargeback:4" {
		t.Errorf("payments after the undo: %s, %v", got, err)
	}
	if got, want := wantRun(t, runReport, d, &jobOptions{Job: driver.JobRef{ID: "p1-undo"}}),
		"job p1-undo: 2 approved, 2 committed, 0 remaining: 2 matching, 0 drifted, 0 missing\n"+
			"job p1-undo is the undo of p1: matching rows have their values from before p1 again\n"; !strings.HasSuffix(got, want) {
		t.Errorf("report p1-undo: got %q, want it to end %q", got, want)
	}
	wantExit(t, chunksIn(t, l, "", "undo", "p1-undo"), 3, "job p1-undo: is the undo of p1; an undo is not undone (register a new job of change hold_payment to change those rows again)")

	// A uuid key: the keys as they are, and in JSON in the lists.
	a, b := "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"
	l.Exec(t, "select register_change('opt_out', $1)", fmt.Sprintf(`{"job_id": "c1", "tenant": "crm", "chunk_size": 1, "allow_partial": true,
	  "targets": [{"id": %q, "email": "b@example.com"}, {"id": %q, "email": "a@example.com"}]}`, b, a))
	wantOut(t, chunksIn(t, l, "", "drain", "c1"), "job c1: 2 calls changed "+a+" "+b+"; next_index 2; the job is done\n")
	l.Exec(t, "update "+shop+".contacts set opted_out = false where id = $1", b)
	wantOut(t, chunksIn(t, l, "", "undo", "--job-id", "c1-back", "c1"),
		"registered job c1-back, the undo of c1: it restores 1 row to the values from before c1, "+a+"\n"+
			"left alone (changed since c1, or gone): drifted "+b+"; missing none\n")
	wantOut(t, chunksIn(t, l, "", "undo", "--json", "--job-id", "c1-back", "c1"),
		fmt.Sprintf(`{"job_id":"c1-back","undoes":"c1","created":false,"change":"opt_out","targets":[%q],"drifted":[%q],"missing":[]}`, a, b)+"\n")
}
