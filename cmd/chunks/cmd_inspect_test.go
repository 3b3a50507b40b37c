package main

import (
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

func TestInspectOptions(t *testing.T) {
	if got, want := *parsed(t, parseJob, "inspect", "--tenant", "acme", "j1"), (jobOptions{Job: driver.JobRef{ID: "j1", Tenant: "acme"}}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	wantInvalid(t, &jobOptions{Job: driver.JobRef{ID: ""}}, "job_id")
	wantExit(t, chunksIn(t, nil, "", "inspect"), 2, "inspect needs JOB")
	wantExit(t, chunksIn(t, nil, "", "inspect", "j1", "j2"), 2, "inspect takes one JOB argument, got 2: j1 j2")
}

func TestInspectRun(t *testing.T) {
	l := clitest.NewLab(t)
	newJob(t, l, "j1", "acme", 3, 2)
	d := labDeps(l)
	if _, err := driver.RunChunk(ctx, l.Conn, "j1", nil); err != nil {
		t.Fatal(err)
	}
	want := "job j1 of tenant acme: 2 of 3 orders committed, 2 per chunk\n" +
		"┌───┬───────┬──────────┬─────┬───────────┐\n" +
		"│ # │ ORDER │ REVISION │ QTY │ CHUNK     │\n" +
		"├───┼───────┼──────────┼─────┼───────────┤\n" +
		"│ 0 │     1 │        1 │   1 │ committed │\n" +
		"│ 1 │     2 │        1 │   1 │ committed │\n" +
		"│ 2 │     3 │        1 │   1 │ remaining │\n" +
		"└───┴───────┴──────────┴─────┴───────────┘\n"
	if got := wantRun(t, runInspect, d, &jobOptions{Job: driver.JobRef{ID: "j1"}}); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got, want := wantRun(t, runInspect, d, &jobOptions{Job: driver.JobRef{ID: "nope"}}), "no job nope is registered\n"; got != want {
		t.Errorf("unknown job: got %q, want %q", got, want)
	}
	wantOut(t, chunksIn(t, l, "", "inspect", "--json", "nope"), "null\n")
	stored, err := driver.InspectJob(ctx, l.Conn, "j1")
	if err != nil {
		t.Fatal(err)
	}
	wantOut(t, chunksIn(t, l, "", "inspect", "--json", "--tenant", "acme", "j1"), clitest.MustJSON(t, stored)+"\n")
	wantOut(t, chunksIn(t, l, "", "inspect", "--json", "--tenant", "other", "j1"), "null\n")
}
