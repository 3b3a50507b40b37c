package fleet

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	fleetapi "github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/pgtest"
)

// fleet.Worker in process: it drains the queue; a conflict pauses its job
// (an operator must look) while the other jobs finish; Stop returns nil.
func TestWorkerInProcess(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	good, bad := l.conflictScene(t, 11, "a", "b", "c")
	// Finished by someone else (a drain) before the worker sees it: the
	// worker removes it from the queue but does not count it as its own.
	s := newSeeder(l, 12)
	s.nextID = 100000 // clear of conflictScene's orders
	other := s.job(t, "drained", 2, 2)
	l.register(t, other)
	l.Exec(t, "select run_chunk('drained')")

	var logs bytes.Buffer
	w := &fleetapi.Worker{
		Pool:        pgtest.Pool(t, l.DSN),
		ID:          "in-process",
		Concurrency: 3,
		Poll:        50 * time.Millisecond,
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
	}
	if err := w.Start(ctx); err != nil {
		t.Fatalf("Start: %v\n%s", err, logs.String())
	}

	waitFor(t, 20*time.Second, "the good jobs done and the bad one paused", func() bool {
		st := l.status(t)
		return st["a"].State == fleetapi.StateDone && st["b"].State == fleetapi.StateDone &&
			st["c"].State == fleetapi.StateDone && st["changed"].State == fleetapi.StatePaused
	})
	stopping, cancel := context.WithTimeout(ctx, 10*time.Second) // a bound on a hung test
	defer cancel()
	if err := w.Stop(stopping); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := l.nextIndex(t, bad.ID); got != 2 {
		t.Fatalf("the conflicting job is at next_index %d, want 2 (its first chunk only)", got)
	}
	st := w.Stats()
	if st.Conflicts != 1 || st.JobsDone != 3 || st.Chunks != 3*4+1 || st.Failures != 0 {
		t.Fatalf("stats %+v", st)
	}
	out := logs.String()
	if !strings.Contains(out, "msg=ready") || !strings.Contains(out, "job=changed") ||
		!strings.Contains(out, "order "+strconv.FormatInt(bad.Targets[2].ID, 10)+": revision is") || !strings.Contains(out, "msg=stopped") {
		t.Fatalf("log:\n%s", out)
	}
	l.wantFinishedBut(t, append(good, other), bad)
}

// Validate and Start refuse a bad configuration, and Start a search_path
// without the queue, before doing anything.
func TestWorkerRefuses(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t, pgtest.WithSearchPath(pgtest.DSN(), "nowhere"))
	for _, c := range []struct {
		w    *fleetapi.Worker
		want string
	}{
		{&fleetapi.Worker{}, "invalid: pool: is nil"},
		{&fleetapi.Worker{Pool: pool, Concurrency: 65}, "invalid: concurrency: must be between 1 and 64, got 65"},
		{&fleetapi.Worker{Pool: pool, Poll: -time.Second}, "invalid: poll: must be between 10ms and 24h0m0s, got -1s"},
		{&fleetapi.Worker{Pool: pool, RetryDelay: 25 * time.Hour}, "invalid: retry_delay: must be between 1ms and 24h0m0s, got 25h0m0s"},
		{&fleetapi.Worker{Pool: pool, Rate: 1001}, "invalid: rate: must be 0 (no limit) or between 1/86400 (one chunk a day) and 1000 chunks per second per job, got 1001"},
		{&fleetapi.Worker{Pool: pool, Rate: 1e-6}, "invalid: rate: must be 0 (no limit) or between 1/86400 (one chunk a day) and 1000 chunks per second per job, got 1e-06"},
		{&fleetapi.Worker{Pool: pool, ID: "a\nb"}, `invalid: id: must be 1 to 63 printable ASCII characters (all that application_name keeps), got "a\nb"`},
		{&fleetapi.Worker{Pool: pool, ID: "evil\u202egnp"}, `invalid: id: must be 1 to 63 printable ASCII characters (all that application_name keeps), got "evil\u202egnp"`},
		{&fleetapi.Worker{Pool: pool, ID: strings.Repeat("w", 201)}, `invalid: id: must be 1 to 63 printable ASCII characters (all that application_name keeps), got "` + strings.Repeat("w", 64) + `"… (201 characters)`},
	} {
		if err := c.w.Validate(); !errors.Is(err, driver.ErrInvalid) || err.Error() != c.want {
			t.Errorf("Validate: %v, want %q", err, c.want)
		}
		if err := c.w.Start(ctx); !errors.Is(err, driver.ErrInvalid) || err.Error() != c.want {
			t.Errorf("Start: %v, want %q", err, c.want)
		}
	}
	w := &fleetapi.Worker{Pool: pool}
	if err := w.Validate(); err != nil {
		t.Fatalf("Validate of a worker with only a Pool: %v", err)
	}
	if err := w.Start(ctx); !errors.Is(err, fleetapi.ErrNotInstalled) {
		t.Fatalf("Start without the queue on the search_path: %v", err)
	}
}
