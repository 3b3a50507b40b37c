package fleet

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	fleetapi "github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// The canary in SQL: pause_job_after(job, n) lets the passes run exactly n
// more chunks; the pass that commits the n-th pauses the job in the same
// transaction, naming itself; status counts down. A paused or idle job is
// queued for its n chunks; pause and resume drop a pending canary.
func TestSQLPauseJobAfter(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	newJobs(t, l, "a b", 10, 2) // 5 chunks each
	if ok, err := fleetapi.PauseAfter(ctx, l.Conn, driver.JobRef{ID: "a"}, 2); err != nil || !ok {
		t.Fatalf("pause a after 2: %v %v", ok, err)
	}
	if ok, err := fleetapi.PauseAfter(ctx, l.Conn, driver.JobRef{ID: "a"}, 2); err != nil || ok {
		t.Fatalf("the same canary again: %v %v, want false", ok, err)
	}
	if s := l.status(t)["a"]; s.State != fleetapi.StateQueued || s.PauseAfter == nil || *s.PauseAfter != 2 {
		t.Fatalf("status of a: %+v, want queued, pausing after 2", s)
	}
	var ran []string
	for {
		p := pass(t, l.Conn, "w7", 0, 1000)
		if p == nil {
			break
		}
		if p.Err != "" || len(ran) > 10 {
			t.Fatalf("pass: %+v", p)
		}
		if p.JobID == "a" {
			switch p.NextIndex {
			case 2:
				if p.Paused || p.PauseAfter == nil || *p.PauseAfter != 1 {
					t.Fatalf("a's first canary chunk: %+v, want pause_after 1", p)
				}
				if s := l.status(t)["a"]; s.PauseAfter == nil || *s.PauseAfter != 1 {
					t.Fatalf("status after one canary chunk: %+v", s)
				}
			case 4:
				if !p.Paused || p.PauseAfter != nil {
					t.Fatalf("a's last canary chunk: %+v, want paused", p)
				}
			}
		}
		ran = append(ran, fmt.Sprintf("%s%d", p.JobID, p.NextIndex))
	}
	// a ran exactly 2 chunks, b ran to its end around it.
	if got := strings.Join(ran, " "); got != "a2 b2 a4 b4 b6 b8 b10" {
		t.Fatalf("passes %s, want a2 b2 a4 b4 b6 b8 b10", got)
	}
	if got := l.queueRow(t, "a"); !clitest.ContainsAll(got, `"paused": true`,
		`"pause_reason": "paused after the chunks that pause --after allowed"`, `"paused_by": "w7"`) {
		t.Fatalf("a's queue row: %s", got)
	}
	if s := l.status(t)["a"]; s.State != fleetapi.StatePaused || s.PauseAfter != nil || s.NextIndex != 4 {
		t.Fatalf("status of a: %+v", s)
	}

	// On a paused job: it is queued for one more chunk, then pauses again.
	if ok, err := fleetapi.PauseAfter(ctx, l.Conn, driver.JobRef{ID: "a"}, 1); err != nil || !ok {
		t.Fatalf("pause a after 1 more: %v %v", ok, err)
	}
	if p := pass(t, l.Conn, "w8", 0, 1000); p == nil || p.JobID != "a" || p.NextIndex != 6 || !p.Paused {
		t.Fatalf("pass: %+v, want a's one chunk, pausing it", p)
	}
	if p := pass(t, l.Conn, "w8", 0, 1000); p != nil {
		t.Fatalf("a pass after the canary: %+v", p)
	}
	// pause drops a pending canary; so does resume, and then a runs to its end.
	if _, err := fleetapi.PauseAfter(ctx, l.Conn, driver.JobRef{ID: "a"}, 1); err != nil {
		t.Fatal(err)
	}
	if ok, err := fleetapi.Pause(ctx, l.Conn, driver.JobRef{ID: "a"}); err != nil || !ok {
		t.Fatalf("pause: %v %v", ok, err)
	}
	if got := pgtest.MustString(t, l.Conn, "select coalesce(pause_after::text, 'none') from job_queue where job_id = 'a'"); got != "none" {
		t.Fatalf("pause_after after pause: %s", got)
	}
	if _, err := fleetapi.PauseAfter(ctx, l.Conn, driver.JobRef{ID: "a"}, 1); err != nil {
		t.Fatal(err)
	}
	if ok, err := fleetapi.Resume(ctx, l.Conn, driver.JobRef{ID: "a"}); err != nil || !ok {
		t.Fatalf("resume: %v %v", ok, err)
	}
	for _, want := range []int{8, 10} {
		if p := pass(t, l.Conn, "w8", 0, 1000); p == nil || p.JobID != "a" || p.NextIndex != want || p.Paused {
			t.Fatalf("pass after resume: %+v, want a to %d, unpaused", p, want)
		}
	}

	// Refusals, naming the field or the job; nothing changes.
	seeder := newSeeder(l, 3)
	seeder.nextID = 5000 // past newJobs' orders
	l.register(t, seeder.job(t, "c", 6, 2))
	l.Exec(t, "select run_chunk('c')")
	l.Exec(t, "delete from job_queue where job_id = 'c'") // idle
	before := pgtest.MustString(t, l.Conn, "select jsonb_agg(q order by job_id)::text from job_queue q")
	for _, c := range []struct {
		n         int
		job, code string
		msg       string
	}{
		{2, "c", "CH409", "job c: only 2 chunks left (next_index 2 of 6, 2 per chunk): after 2 it would be done, not paused; chunks resume c runs it to its end"},
		{1, "a", "CH409", "job a: already done (next_index 10 of 10); nothing to pause"},
		{1, "nope", "CH409", "job nope: not found"},
		{0, "c", "22023", "after: must be between 1 and 10000 chunks, got 0"},
		{10001, "c", "22023", "after: must be between 1 and 10000 chunks, got 10001"},
	} {
		_, err := l.Conn.Exec(ctx, "select pause_job_after($1, $2)", c.job, c.n)
		pgtest.WantPgError(t, err, c.code, c.msg)
	}
	_, err := l.Conn.Exec(ctx, "select pause_job_after('c', null)")
	pgtest.WantPgError(t, err, "22023", "after: must be between 1 and 10000 chunks, got null")
	if after := pgtest.MustString(t, l.Conn, "select jsonb_agg(q order by job_id)::text from job_queue q"); after != before {
		t.Fatalf("refusals changed the queue:\n%s\n%s", before, after)
	}
	if _, err := fleetapi.PauseAfter(ctx, l.Conn, driver.JobRef{ID: "c"}, 0); !errors.Is(err, driver.ErrInvalid) || err.Error() != "invalid: after: must be between 1 and 10000 chunks, got 0" {
		t.Fatalf("fleet.PauseAfter(0): %v", err)
	}
	// An idle job is queued for its canary.
	if ok, err := fleetapi.PauseAfter(ctx, l.Conn, driver.JobRef{ID: "c"}, 1); err != nil || !ok {
		t.Fatalf("pause the idle c after 1: %v %v", ok, err)
	}
	if p := pass(t, l.Conn, "w8", 0, 1000); p == nil || p.JobID != "c" || p.NextIndex != 4 || !p.Paused {
		t.Fatalf("pass: %+v, want c's one chunk, pausing it", p)
	}
}

// A canary of 3 chunks with several workers: the job runs exactly 3
// chunks, whichever workers take them, then holds while every other job
// finishes and the workers go on polling; chunks status says so; after
// chunks resume it runs to its end, every order changed exactly once.
func TestCanaryWithSeveralWorkers(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.slowOrders(t, 0.02) // chunks in flight long enough for the workers to overlap
	s := newSeeder(l, 15)
	canary := s.job(t, "canary", 40, 2) // 20 chunks
	l.register(t, canary)
	jobs := []job{canary}
	for i := range 4 {
		j := s.job(t, fmt.Sprintf("other-%d", i), 12, 2)
		l.register(t, j)
		jobs = append(jobs, j)
	}
	wantOut(t, l.Chunks(t, "pause", "--after", "3", "canary"),
		"job canary: the workers run 3 more chunks of it, then it pauses itself until chunks resume canary\n")
	if out := wantOut(t, l.Chunks(t, "status", "--all"), ""); !strings.Contains(out, "pauses after 3 more chunks") {
		t.Fatalf("status before the workers start:\n%s", out)
	}

	var workers []*clitest.Proc
	for i := range 3 {
		workers = append(workers, l.worker(t, fmt.Sprintf("w%d", i), "--concurrency", "2", "--poll", "50ms"))
	}
	pgtest.WaitFor(t, 30*time.Second, "the canary paused and every other job done", func() bool {
		st := l.status(t)
		if st["canary"].State != fleetapi.StatePaused {
			return false
		}
		for _, j := range jobs[1:] {
			if st[j.ID].State != fleetapi.StateDone {
				return false
			}
		}
		return true
	})
	// Exactly 3 chunks. And it holds: a job registered now is taken and
	// finished by the workers, whose passes all look at the queue where
	// the canary waits, and still the canary has its 3 chunks.
	late := s.job(t, "late", 8, 1)
	l.register(t, late)
	jobs = append(jobs, late)
	pgtest.WaitFor(t, 30*time.Second, "a job registered after the canary paused to finish", func() bool {
		return l.status(t)["late"].State == fleetapi.StateDone
	})
	if got, audit := l.nextIndex(t, "canary"), pgtest.MustInt(t, l.Conn, "select count(*) from job_audit where job_id = 'canary'"); got != 6 || audit != 6 {
		t.Fatalf("the canary is at next_index %d with %d audit rows, want exactly 3 chunks of 2", got, audit)
	}
	st := l.status(t)["canary"]
	if st.PauseReason == nil || *st.PauseReason != "paused after the chunks that pause --after allowed" ||
		st.PausedBy == nil || !strings.HasPrefix(*st.PausedBy, "w") || st.PauseAfter != nil {
		t.Fatalf("status of the paused canary: %+v", st)
	}
	logged := 0
	for _, w := range workers {
		for _, line := range w.Lines() {
			if strings.Contains(line, "canary done") && strings.Contains(line, "job=canary") {
				logged++
			}
		}
	}
	if logged != 1 {
		t.Fatalf("%d workers logged that the canary is done, want 1", logged)
	}

	wantOut(t, l.Chunks(t, "resume", "canary"), "resumed job canary: it is queued again\n")
	pgtest.WaitFor(t, 30*time.Second, "every job done after resume", func() bool { return l.allDone(t) })
	stopWorkers(t, workers...)
	l.wantFinished(t, jobs)
}

// wantOut fails unless r exited 0 with nothing on stderr and, when want is
// not empty, exactly want on stdout; it returns stdout.
func wantOut(t testing.TB, r clitest.Result, want string) string {
	t.Helper()
	if r.Code != 0 || r.Signal != 0 || strings.TrimSpace(r.Stderr) != "" || want != "" && r.Stdout != want {
		t.Fatalf("want exit 0 and stdout %q, got %v", want, r)
	}
	return r.Stdout
}
