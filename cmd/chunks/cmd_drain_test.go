package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/pace"
)

func TestDrainOptions(t *testing.T) {
	got := *parsed(t, parseDrain, "drain", "--max-chunks", "3", "--workers", "2", "--throttle-query", "select false", "--check-interval", "2s", "--tenant", "acme", "j1")
	want := drainOptions{Job: driver.JobRef{ID: "j1", Tenant: "acme"}, MaxChunks: 3, Workers: 2,
		Pace: pace.Config{ThrottleQuery: "select false", CheckInterval: 2 * time.Second}}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got, want := *parsed(t, parseDrain, "drain", "j1"), (drainOptions{Job: driver.JobRef{ID: "j1"}, MaxChunks: driver.MaxMaxChunks, Workers: 1,
		Pace: pace.Config{CheckInterval: pace.DefaultCheckInterval}}); got != want {
		t.Errorf("defaults: got %+v, want %+v", got, want)
	}
	ok := drainOptions{Job: driver.JobRef{ID: "j1"}, MaxChunks: 1, Workers: 1}
	for _, tc := range []struct {
		edit func(o *drainOptions)
		want string
	}{
		{func(o *drainOptions) { o.Job.ID = "" }, "job_id: must be 1 to 64"},
		{func(o *drainOptions) { o.Workers = 0 }, "invalid: workers: must be between 1 and 64, got 0"},
		{func(o *drainOptions) { o.Workers = 65 }, "invalid: workers: must be between 1 and 64, got 65"},
		{func(o *drainOptions) { o.MaxChunks = 65 }, "invalid: max_chunks: must be between 1 and 64, got 65"},
		{func(o *drainOptions) { o.Pace.ThrottleQuery = " " }, "invalid: throttle_query: is blank"},
		{func(o *drainOptions) { o.Pace.MaxReplicaLag = -time.Second }, "invalid: max_replica_lag: must be between 0 (off) and"},
	} {
		o := ok
		tc.edit(&o)
		wantInvalid(t, &o, tc.want)
	}
	wantExit(t, chunksIn(t, nil, "", "drain", "j1", "--max-chunks", "3"), 2, "flag --max-chunks after the job id: put flags before the job id (chunks drain [flags] JOB)")
}

// Each drainer makes at most MaxChunks calls; several drainers' results
// are combined; an unknown job prints nothing.
func TestDrainRun(t *testing.T) {
	l := clitest.NewLab(t)
	newJob(t, l, "j1", "acme", 5, 2)
	d := labDeps(l)
	j1 := driver.JobRef{ID: "j1"}
	wantRunOut(t, runDrain, d, &drainOptions{Job: j1, MaxChunks: 2, Workers: 1}, "job j1: 2 calls cancelled 1-4; next_index 4\n")
	wantRunOut(t, runDrain, d, &drainOptions{Job: j1, MaxChunks: 64, Workers: 1}, "job j1: 1 call cancelled 5; next_index 5; the job is done\n")
	wantOut(t, chunksIn(t, l, "", "drain", "--json", "--workers", "2", "j1"), `{"calls":2,"processed":[],"next_index":5,"done":true}`+"\n")
	if out := wantRunErr(t, runDrain, d, &drainOptions{Job: driver.JobRef{ID: "nope"}, MaxChunks: 1, Workers: 3}, driver.ErrConflict,
		"conflict: job nope: not found"); out != "" {
		t.Errorf("unknown job: printed %q", out)
	}
	if got := d.stderr.(interface{ String() string }).String(); got != "" {
		t.Errorf("stderr (not a terminal: no bar): %q", got)
	}
}

// The bar shows the job's ids done out of all, and is cleared when stopped.
func TestDrainProgress(t *testing.T) {
	l := clitest.NewLab(t)
	newJob(t, l, "j1", "acme", 4, 2)
	runChunk(t, l, "j1")
	d := labDeps(l)
	stderr := &clitest.Output{}
	d.stderr = stderr
	stop := showProgress(ctx, d, driver.JobRef{ID: "j1"}, nil)
	got := outputHolding(t, stderr, "(2/4)")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "\rjob j1: ids") || !strings.Contains(got, " 50% |") {
		t.Errorf("bar: %q", got)
	}
	all := strings.Split(stderr.String(), "\r")
	if n := len(all); n < 3 || all[n-1] != "" || strings.TrimLeft(all[n-2], " ") != "" || len(all[n-2]) < len("job j1: ids") {
		t.Errorf("the bar is not cleared last: %q", stderr.String())
	}
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is not a terminal")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := showProgress(cancelled, d, driver.JobRef{ID: "j1"}, nil)(); err == nil {
		t.Error("a bar on a cancelled context: no error")
	}
}
