package main

import (
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

func TestRunOptions(t *testing.T) {
	if got, want := *parsed(t, parseRun, "run", "--fail-at", "after-audit", "--tenant", "acme", "j1"),
		(runOptions{Job: driver.JobRef{ID: "j1", Tenant: "acme"}, FailAt: "after-audit"}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := parsed(t, parseRun, "run", "--crash-at", "after-orders", "j1"); got.CrashAt != "after-orders" {
		t.Errorf("--crash-at: got %+v", got)
	}
	j1 := driver.JobRef{ID: "j1"}
	wantInvalid(t, &runOptions{Job: j1, FailAt: "bogus"}, `usage: --fail-at "bogus": POINT must be one of after-orders, after-audit, after-checkpoint, after-commit`)
	wantInvalid(t, &runOptions{Job: j1, CrashAt: "bogus"}, `usage: --crash-at "bogus": POINT must be one of`)
	wantInvalid(t, &runOptions{Job: driver.JobRef{ID: "a b"}}, "job_id")
	wantExit(t, chunksIn(t, nil, "", "run", "j1", "--fail-at", "after-audit"), 2, "flag --fail-at after the job id: put flags before the job id (chunks run [flags] JOB)")
}

// One chunk per run; a drill's failure before COMMIT rolls it back, after
// COMMIT keeps it (said, then failed); a done job runs nothing.
func TestRunRun(t *testing.T) {
	l := clitest.NewLab(t)
	newJob(t, l, "j1", "acme", 5, 2)
	d := labDeps(l)
	j1 := driver.JobRef{ID: "j1"}
	wantRunOut(t, runRun, d, &runOptions{Job: j1}, "job j1: cancelled 1-2; next_index 2\n")
	wantRunErr(t, runRun, d, &runOptions{Job: j1, FailAt: driver.AfterAudit}, nil, "--fail-at after-audit: drill failure")
	if got, want := wantRunErr(t, runRun, d, &runOptions{Job: j1, FailAt: driver.AfterCommit}, nil, "--fail-at after-commit: drill failure"),
		"job j1: cancelled 3-4; next_index 4\n"; got != want {
		t.Errorf("after-commit: got %q, want %q", got, want)
	}
	wantOut(t, chunksIn(t, l, "", "run", "--json", "j1"), `{"processed":[5],"next_index":5,"done":true}`+"\n")
	wantRunOut(t, runRun, d, &runOptions{Job: j1}, "job j1 is already done (next_index 5); nothing to do\n")
	wantRunErr(t, runRun, d, &runOptions{Job: driver.JobRef{ID: "j1", Tenant: "other"}}, driver.ErrConflict, "conflict: job j1: not found for tenant other")
	if got := d.stderr.(interface{ String() string }).String(); got != "" {
		t.Errorf("stderr: %q", got)
	}
}
