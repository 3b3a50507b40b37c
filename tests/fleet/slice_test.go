package fleet

import (
	"strings"
	"testing"
	"time"

	fleetapi "github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Issue 37, decision 3, at the SQL face: a pass that asks to hold its job
// keeps it for its session; every other pass skips the job until the
// slice ends (a pass without hold, here), and a session that dies lets it
// go at once. Pause takes effect at the slice's next chunk.
func TestSQLSliceHoldsTheJobForItsSession(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	newJobs(t, l, "a b", 6, 1)
	one, other := pgtest.Connect(t, l.DSN), pgtest.Connect(t, l.DSN)
	hold := func(slice string, h bool) *fleetapi.Pass {
		t.Helper()
		p, err := fleetapi.RunNext(ctx, one, "w1", fleetapi.PassOptions{SliceJob: slice, Hold: h})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := hold("", true)
	if first == nil || first.JobID != "a" || !first.Held || first.NextIndex != 1 {
		t.Fatalf("the first pass: %+v, want job a's first chunk, held", first)
	}
	// The job went behind b in the queue, but it is the slice's: another
	// session takes b, and then nothing.
	if p := pass(t, other, "w2", 0, 0); p == nil || p.JobID != "b" {
		t.Fatalf("another session's pass: %+v, want job b", p)
	}
	if p := pass(t, other, "w2", 0, 0); p == nil || p.JobID != "b" {
		t.Fatalf("another session's second pass: %+v, want job b again (a is held)", p)
	}
	if p := hold("a", true); p == nil || p.JobID != "a" || !p.Held || p.NextIndex != 2 {
		t.Fatalf("the slice's second chunk: %+v", p)
	}
	if p := hold("a", false); p == nil || p.JobID != "a" || p.Held || p.NextIndex != 3 {
		t.Fatalf("the slice's last chunk: %+v, want it let go", p)
	}
	// Each chunk put a behind every waiting job: b waited longest now.
	if p := pass(t, other, "w2", 0, 0); p == nil || p.JobID != "b" {
		t.Fatalf("after the slice, another session: %+v, want job b (it waited longest)", p)
	}

	// A slice whose job is paused ends at its next pass, letting it go.
	if p := hold("", true); p == nil || p.JobID != "a" || !p.Held {
		t.Fatalf("a new slice: %+v", p)
	}
	l.Exec(t, "select pause_job('a')")
	if p := hold("a", true); p != nil {
		t.Fatalf("the slice of a paused job: %+v, want nothing", p)
	}
	if n := pgtest.MustInt(t, l.Conn, "select count(*) from pg_locks where locktype = 'advisory' and pid = $1", one.PgConn().PID()); n != 0 {
		t.Fatalf("the session still holds %d advisory locks after its slice ended", n)
	}
	l.Exec(t, "select resume_job('a')")

	// A session that dies inside a slice lets its job go at once.
	dying := pgtest.Connect(t, l.DSN)
	p, err := fleetapi.RunNext(ctx, dying, "w3", fleetapi.PassOptions{Hold: true})
	if err != nil || p == nil || !p.Held {
		t.Fatalf("the dying session's slice: %+v, %v", p, err)
	}
	held := p.JobID
	if err := dying.Close(ctx); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitFor(t, 10*time.Second, "the dead session's job taken by another", func() bool {
		p := pass(t, other, "w2", 0, 0)
		return p != nil && p.JobID == held
	})
}

// A worker runs a job's chunks in slices: with --slice-chunks 4, two jobs
// of 12 chunks are drained in runs of 4 chunks of one job, then 4 of the
// other (one worker, one pass at a time), and with --slice-chunks 1 one
// chunk of each in turn.
func TestWorkerSlices(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		chunks string
		want   string
	}{{"4", "aaaabbbbaaaabbbbaaaabbbb"}, {"1", "abababababababababababab"}} {
		l := newLab(t)
		jobs := newJobs(t, l, "a b", 12, 1)
		w := l.worker(t, "w1", "--slice-chunks", c.chunks, "--slice", "10s", "--poll", "100ms")
		pgtest.WaitFor(t, 30*time.Second, "both jobs done", func() bool { return l.allDone(t) })
		stopWorkers(t, w)
		var order strings.Builder
		for _, line := range w.Lines() {
			if strings.Contains(line, `msg="chunk committed"`) {
				switch {
				case strings.Contains(line, "job="+jobs[0].ID+" "):
					order.WriteByte('a')
				case strings.Contains(line, "job="+jobs[1].ID+" "):
					order.WriteByte('b')
				}
			}
		}
		if order.String() != c.want {
			t.Errorf("--slice-chunks %s: chunks in the order %s, want %s", c.chunks, order.String(), c.want)
		}
		l.wantFinished(t, jobs)
	}
}
