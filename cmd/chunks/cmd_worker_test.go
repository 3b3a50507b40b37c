package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/app/web"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/pace"
)

func TestWorkerOptions(t *testing.T) {
	got := parsed(t, parseWorker, "worker", "--id", "w1", "--concurrency", "3", "--poll", "2s", "--rate", "0.5", "--retry-delay", "3s",
		"--chunk-time", "150ms", "--slice", "50ms", "--slice-chunks", "4", "--verbose", "--max-replica-lag", "1s", "--throttle-query", "select false", "--http", ":0", "--page-size", "7", "--refresh", "2s")
	want := workerOptions{ID: "w1", Concurrency: 3, Poll: 2 * time.Second, Rate: 0.5, RetryDelay: 3 * time.Second,
		ChunkTime: 150 * time.Millisecond, Slice: 50 * time.Millisecond, SliceChunks: 4, Verbose: true,
		Pace: pace.Config{MaxReplicaLag: time.Second, ThrottleQuery: "select false", CheckInterval: pace.DefaultCheckInterval},
		HTTP: httpOptions{Addr: ":0", PageSize: 7, Refresh: 2 * time.Second}}
	if *got != want {
		t.Errorf("got %+v, want %+v", *got, want)
	}
	def := *parsed(t, parseWorker, "worker")
	if err := def.Validate(); err != nil || def.HTTP.PageSize != web.DefaultPageSize || def.Concurrency != 1 || def.ID != "" {
		t.Errorf("the defaults %+v: %v", def, err)
	}
	valid := func(edit func(o *workerOptions)) *workerOptions {
		o := def
		edit(&o)
		return &o
	}
	wantInvalid(t, valid(func(o *workerOptions) { o.Concurrency = 0 }), "concurrency: must be between 1 and 64, got 0")
	wantInvalid(t, valid(func(o *workerOptions) { o.ID = "evil\u202egnp" }), "--id: must be 1 to 63 printable ASCII characters")
	wantInvalid(t, valid(func(o *workerOptions) { o.Rate = -1 }), "rate: must be 0 (no limit)")
	wantInvalid(t, valid(func(o *workerOptions) { o.Poll = time.Nanosecond }), "poll: must be between")
	wantInvalid(t, valid(func(o *workerOptions) { o.RetryDelay = 25 * time.Hour }), "retry_delay: must be between 1ms and 24h0m0s, got 25h0m0s")
	wantInvalid(t, valid(func(o *workerOptions) { o.ChunkTime = time.Microsecond }), "chunk_time: must be between 1ms and 24h0m0s, got 1µs")
	wantInvalid(t, valid(func(o *workerOptions) { o.SliceChunks = 0 }), "slice-chunks: must be between 1 (no slices) and 1000, got 0")
	wantInvalid(t, valid(func(o *workerOptions) { o.Slice = 25 * time.Hour }), "slice: must be between 1ms and 24h0m0s, got 25h0m0s")
	wantInvalid(t, valid(func(o *workerOptions) { o.Pace.CheckInterval = -time.Second }), "check")
	wantInvalid(t, valid(func(o *workerOptions) { o.HTTP.PageSize = 0 }), "page-size: must be between 1 and")
	wantInvalid(t, valid(func(o *workerOptions) { o.HTTP.Refresh = time.Hour }), "refresh: must be between 100ms and 1m0s, got 1h0m0s")
	wantExit(t, chunksIn(t, nil, "", "worker", "extra"), 2, `chunks: usage: worker takes no arguments, got ["extra"]`)
	long := "--id=" + strings.Repeat("x", 296)
	r := chunksIn(t, nil, "", "worker", "x", long)
	wantExit(t, r, 2, `chunks: usage: worker takes no arguments, got ["x" "--id=xxx`, "characters)")
	if len(r.Stderr) > 250 {
		t.Errorf("the message is not bounded: %d bytes", len(r.Stderr))
	}
}

// The worker runs a job to its end, logging to d.stderr, and a SIGTERM
// (to this process, which the worker then holds) stops it with its
// summary on out.
func TestWorkerRun(t *testing.T) {
	l := clitest.NewLab(t)
	newJob(t, l, "j1", "acme", 3, 2)
	log := &clitest.Output{}
	d := labDeps(l)
	d.stderr = log
	o := &workerOptions{ID: "w1", Concurrency: 1, SliceChunks: fleet.DefaultSliceChunks, Poll: 100 * time.Millisecond, HTTP: httpOptions{PageSize: 1, Refresh: time.Second},
		Pace: pace.Config{CheckInterval: pace.DefaultCheckInterval}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- runWorker(ctx, d, o, &out) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(log.String(), "job done") {
		if time.Now().After(deadline) {
			t.Fatalf("no job done in the log:\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runWorker: %v\n%s", err, log)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the worker did not stop on SIGTERM:\n%s", log)
	}
	if got, want := out.String(), "worker w1 stopped: 2 chunks committed, 1 job finished, 0 jobs paused after a conflict, 0 after another error, 0 failed chunks\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !clitest.ContainsAll(log.String(), "msg=ready", "worker=w1", "signal: finishing the chunks in flight") {
		t.Errorf("the log:\n%s", log)
	}
	job, err := driver.InspectJob(ctx, l.Conn, "j1")
	if err != nil || job.NextIndex != 3 {
		t.Fatalf("j1 after the worker: %+v, %v", job, err)
	}
}

// A worker on a schema without chunks returns at once, before it would
// wait for a signal, saying so, and prints no summary.
func TestWorkerNotInstalled(t *testing.T) {
	l := clitest.NewLab(t)
	d := labDeps(l)
	d.schema = "nowhere"
	o := parsed(t, parseWorker, "worker", "--id", "w2")
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	err := runWorker(c, d, o, &out)
	if !errors.Is(err, fleet.ErrNotInstalled) || !strings.HasPrefix(err.Error(), "no chunks queue on the search_path: run chunks migrate for this schema first") || out.Len() != 0 {
		t.Fatalf("want fleet.ErrNotInstalled and nothing on out, got %v and %q", err, out.String())
	}
}
