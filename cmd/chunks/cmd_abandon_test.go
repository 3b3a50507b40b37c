package main

import (
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

func TestAbandonOptions(t *testing.T) {
	got := parsed(t, parseAbandon, "abandon", "--reason", "superseded", "--tenant", "acme", "j1")
	if got.Job != (driver.JobRef{ID: "j1", Tenant: "acme"}) || got.Reason != "superseded" {
		t.Errorf("parsed %+v", got)
	}
	wantInvalid(t, &abandonOptions{Job: driver.JobRef{ID: "j1"}}, "reason: must say why the job is abandoned, got an empty text")
	wantInvalid(t, &abandonOptions{Job: driver.JobRef{ID: "j1"}, Reason: strings.Repeat("é", 501)}, "reason: at most 500 characters, got 501")
	wantInvalid(t, &abandonOptions{Job: driver.JobRef{ID: "bad id"}, Reason: "x"}, "job_id")
	wantExit(t, chunksIn(t, nil, "", "abandon", "j1", "--reason", "x"), 2, "flag --reason after the job id")
}

// chunks abandon through the binary: the job ends, status says so, it is
// refused by resume, abandoning it again changes nothing, and an
// unknown job is a conflict.
func TestAbandonRun(t *testing.T) {
	l := clitest.NewLab(t)
	newJob(t, l, "j1", "acme", 4, 1)
	d := labDeps(l)
	job := driver.JobRef{ID: "j1"}
	if got, want := wantRun(t, runAbandon, d, &abandonOptions{Job: job, Reason: "superseded by j2"}),
		"abandoned job j1: 0 of its 4 targets were committed and stay (chunks report, chunks undo); the other 4 will never run\n"; got != want {
		t.Errorf("abandon: got %q, want %q", got, want)
	}
	r := chunksIn(t, l, "", "abandon", "--reason", "again", "j1")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "job j1 was already abandoned by ") || !strings.HasSuffix(r.Stdout, " (superseded by j2); nothing changed\n") {
		t.Errorf("abandon again: %v", r)
	}
	wantExit(t, chunksIn(t, l, "", "resume", "j1"), 3, "job j1: abandoned by", "(superseded by j2); nothing to resume")
	if r := chunksIn(t, l, "", "status"); r.Code != 0 || !strings.Contains(r.Stdout, "abandoned") {
		t.Errorf("status: %v", r)
	}
	wantExit(t, chunksIn(t, l, "", "abandon", "--reason", "x", "nope"), 3, "nope")
}
