package main

import (
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/clitest"
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
