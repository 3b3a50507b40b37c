package main

import (
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// A check prints its answer, then fails as a conflict when the plan would
// not apply whole; it writes nothing.
func TestCheckRun(t *testing.T) {
	l := clitest.NewLab(t)
	l.Exec(t, `insert into orders (id, tenant, qty, state, revision) select i, 'acme', 1, 'pending', 1 from generate_series(1, 3) as i`)
	d := labDeps(l)
	wantRunOut(t, runCheck, d, &planOptions{Plan: testPlan("j1", 3, 2)}, "job j1: the id is free; register would create the job\n3 of 3 targets would be cancelled now; 0 would not\n")
	want := "job j2: the id is free; register would create the job\n" +
		"┌───────┬────────────────────────┐\n" +
		"│ ORDER │ WOULD NOT BE CANCELLED │\n" +
		"├───────┼────────────────────────┤\n" +
		"│     4 │ order 4: missing       │\n" +
		"└───────┴────────────────────────┘\n" +
		"3 of 4 targets would be cancelled now; 1 would not\n"
	if got := wantRunErr(t, runCheck, d, &planOptions{Plan: testPlan("j2", 4, 2)}, driver.ErrConflict,
		"conflict: check: job j2: 1 of 4 targets would not be cancelled"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var n int
	if err := l.Conn.QueryRow(ctx, "select count(*) from jobs").Scan(&n); err != nil || n != 0 {
		t.Fatalf("check registered %d jobs (%v)", n, err)
	}
	if _, err := driver.Register(ctx, l.Conn, testPlan("j1", 3, 2)); err != nil {
		t.Fatal(err)
	}
	runChunk(t, l, "j1")
	wantRunOut(t, runCheck, d, &planOptions{Plan: testPlan("j1", 3, 2)}, "job j1: already registered with this approval; register would change nothing\n"+
		"1 of 3 targets would be cancelled now, 2 already are (committed by this job); 0 would not\n")
	r := chunksIn(t, l, clitest.MustJSON(t, testPlan("j1", 2, 2)), "check", "--json", "-")
	wantExitOut(t, r, 3, `{"job_id":"j1","ok":false,"job":"conflict","job_problem":"job j1: already registered with different targets",`+
		`"targets":[{"id":1,"ok":false,"problem":"order 1: state is cancelled","committed":false},`+
		`{"id":2,"ok":false,"problem":"order 2: state is cancelled","committed":false}]}`+"\n",
		"chunks: conflict: check: job j1: 2 of 2 targets would not be cancelled; registering would conflict")
}
