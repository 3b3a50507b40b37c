package main

import (
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

func TestPauseOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want pauseOptions
	}{
		{[]string{"pause", "j1"}, pauseOptions{Job: driver.JobRef{ID: "j1"}}},
		{[]string{"pause", "--after", "3", "--tenant", "acme", "j1"}, pauseOptions{Job: driver.JobRef{ID: "j1", Tenant: "acme"}, After: ptr(3)}},
	} {
		got := parsed(t, parsePause, tc.args...)
		if got.Job != tc.want.Job || (got.After == nil) != (tc.want.After == nil) || (got.After != nil && *got.After != *tc.want.After) {
			t.Errorf("%q: got %+v, want %+v", tc.args, got, tc.want)
		}
	}
	wantInvalid(t, &pauseOptions{Job: driver.JobRef{ID: "j1"}, After: ptr(0)}, "after: must be between 1 and 10000 chunks, got 0")
	wantInvalid(t, &pauseOptions{Job: driver.JobRef{ID: "j1"}, After: ptr(10001)}, "after: must be between 1 and 10000 chunks, got 10001")
	wantInvalid(t, &pauseOptions{Job: driver.JobRef{ID: "bad id"}}, "job_id")
	wantInvalid(t, &pauseOptions{Job: driver.JobRef{ID: "j1", Tenant: "a\x00b"}}, "tenant")
	wantExit(t, chunksIn(t, nil, "", "pause", "--tenant", "", "j1"), 2, "tenant")
	wantExit(t, chunksIn(t, nil, "", "pause", "j1", "--after", "3"), 2, "flag --after after the job id: put flags before the job id (chunks pause [flags] JOB)")
}

func TestPauseAndResumeRun(t *testing.T) {
	l := clitest.NewLab(t)
	newJob(t, l, "j1", "acme", 4, 1)
	d := labDeps(l)
	job := driver.JobRef{ID: "j1"}
	if got, want := wantRun(t, runPause, d, &pauseOptions{Job: job}), "paused job j1: no worker starts a chunk of it until chunks resume j1\n"; got != want {
		t.Errorf("pause: got %q, want %q", got, want)
	}
	if got, want := wantRun(t, runPause, d, &pauseOptions{Job: job}), "job j1 was already paused; nothing changed\n"; got != want {
		t.Errorf("pause again: got %q, want %q", got, want)
	}
	if got, want := wantRun(t, runResume, d, &jobOptions{Job: job}), "resumed job j1: it is queued again\n"; got != want {
		t.Errorf("resume: got %q, want %q", got, want)
	}
	wantOut(t, chunksIn(t, l, "", "pause", "--json", "--after", "2", "j1"), `{"after":2,"changed":true,"job_id":"j1"}`+"\n")
	wantOut(t, chunksIn(t, l, "", "pause", "--after", "2", "j1"), "job j1 already pauses after 2 more chunks; nothing changed\n")
	wantOut(t, chunksIn(t, l, "", "resume", "--json", "j1"), `{"changed":true,"job_id":"j1"}`+"\n")
	wantExit(t, chunksIn(t, l, "", "pause", "--after", "4", "j1"), 3, "j1")
	wantExit(t, chunksIn(t, l, "", "resume", "nope"), 3, "nope")
}
