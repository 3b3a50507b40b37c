package main

import (
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

func TestReportOptions(t *testing.T) {
	if got, want := *parsed(t, parseJob, "report", "--tenant", "acme", "j1"), (jobOptions{Job: driver.JobRef{ID: "j1", Tenant: "acme"}}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	wantExit(t, chunksIn(t, nil, "", "report", "j1", "--tenant", "acme"), 2, "flag --tenant after the job id")
}

// Each committed order is matching, drifted or missing.
func TestReportRun(t *testing.T) {
	l := clitest.NewLab(t)
	newJob(t, l, "j1", "acme", 4, 3)
	runChunk(t, l, "j1")
	l.Exec(t, "update orders set qty = 5 where id = 2")
	l.Exec(t, "delete from orders where id = 3")
	want := "┌───────┬──────────┐\n" +
		"│ ORDER │ STATUS   │\n" +
		"├───────┼──────────┤\n" +
		"│     1 │ matching │\n" +
		"│     2 │ drifted  │\n" +
		"│     3 │ missing  │\n" +
		"└───────┴──────────┘\n" +
		"job j1: 4 approved, 3 committed, 1 remaining: 1 matching, 1 drifted, 1 missing\n"
	if got := wantRun(t, runReport, labDeps(l), &jobOptions{Job: driver.JobRef{ID: "j1"}}); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	wantOut(t, chunksIn(t, l, "", "report", "--json", "--tenant", "acme", "j1"),
		`{"approved":[1,2,3,4],"committed":[1,2,3],"remaining":[4],"matching":[1],"drifted":[2],"missing":[3]}`+"\n")
	wantExit(t, chunksIn(t, l, "", "report", "nope"), 3, "job nope")
}
