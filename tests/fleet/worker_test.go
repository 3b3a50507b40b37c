package fleet

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	fleetapi "github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
	chunkssql "github.com/chunks-dev/chunks/sql"
)

// Three workers drain 30 jobs of 1 to 64 targets with chunk sizes 1 to 10;
// one of them is killed with SIGKILL while it is inside a chunk. Its claim
// ends with its transaction: its server session finishes the statement it
// had already sent (the chunk commits, or not), and then another worker
// takes the job's next chunk at once, with no lease to wait out. Every job
// ends, every approved order is changed exactly once, every audit equals
// its targets and the queue is empty.
func TestKilledWorkerLosesNothing(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	// A chunk takes about 30 ms, so the run lasts long enough to kill into;
	// the victim's take 300 ms, so it is killed in the middle of one.
	victimApp := l.Name + "-victim"
	l.slowOrdersFor(t, 0.03, victimApp, 0.3)
	s := newSeeder(l, 30)
	var jobs []job
	chunks := 0
	for i := range 30 {
		n := 1 + s.rng.IntN(64)
		if i == 0 {
			n = 64 // both ends of the range, always
		} else if i == 1 {
			n = 1
		}
		j := s.job(t, fmt.Sprintf("job-%02d", i), n, 1+s.rng.IntN(10))
		l.register(t, j)
		jobs = append(jobs, j)
		chunks += j.chunks()
	}

	workers := []*clitest.Proc{
		l.startWorker(t, "w1", "--concurrency", "2", "--poll", "200ms"),
		l.startWorkerAs(t, victimApp, "victim", "--concurrency", "1", "--poll", "200ms"),
		l.startWorker(t, "w3", "--concurrency", "2", "--poll", "200ms"),
	}
	for _, w := range workers {
		w.WaitLine(t, 0, 20*time.Second, "msg=ready")
	}
	victim := workers[1]

	// Mid-run: some chunks are committed, and the victim is inside a chunk
	// of a job that will have chunks left after it.
	var held fleetapi.JobStatus
	pgtest.WaitFor(t, 20*time.Second, "the victim in a chunk mid-run", func() bool {
		done := pgtest.MustInt(t, l.Conn, "select coalesce(sum(ceil(next_index::numeric / chunk_size)), 0)::int from jobs")
		if done < chunks/5 {
			return false
		}
		for _, st := range l.status(t) {
			if st.State == fleetapi.StateRunning && st.RunningIn != nil && *st.RunningIn == victimApp {
				held = st
				return true
			}
		}
		return false
	})
	victim.Signal(t, syscall.SIGKILL)
	if r := victim.WaitWithin(t, 10*time.Second); r.Signal != syscall.SIGKILL {
		t.Fatalf("want the victim killed by SIGKILL, got %v", r)
	}
	killed := time.Now()
	if l.allDone(t) {
		t.Fatal("every job finished before the kill: the test proves nothing")
	}
	mark := map[*clitest.Proc]int{workers[0]: workers[0].LineCount(), workers[2]: workers[2].LineCount()}

	// Another worker moves the victim's job on: a chunk of it committed by
	// w1 or w3 after the kill (or the job had no chunk left). No lease:
	// this takes the victim's 300 ms chunk plus a pass, well under the
	// bound.
	var by string
	pgtest.WaitFor(t, 5*time.Second, "another worker to move the killed worker's job on", func() bool {
		for _, w := range []*clitest.Proc{workers[0], workers[2]} {
			for _, line := range w.Lines()[mark[w]:] {
				if strings.Contains(line+" ", " job="+held.JobID+" ") && strings.Contains(line, "chunk committed") {
					by = w.Name
					return true
				}
			}
		}
		return l.nextIndex(t, held.JobID) == held.N
	})
	t.Logf("killed the victim inside a chunk of %s at %d/%d; %s moved the job on %s later", held.JobID, held.NextIndex,
		held.N, by, time.Since(killed).Round(time.Millisecond))

	pgtest.WaitFor(t, 40*time.Second, "every job done and the queue empty after the kill", func() bool {
		return l.allDone(t) && pgtest.MustInt(t, l.Conn, "select count(*) from job_queue") == 0
	})
	stopWorkers(t, workers[0], workers[2])
	l.wantFinished(t, jobs)
}

// SIGTERM while a chunk is in flight: the chunk commits, no new chunk
// starts, the job is back in the queue (runnable at once) and the worker
// exits 0.
func TestSIGTERMFinishesTheChunkInFlight(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.slowOrders(t, 1.0)
	j := newSeeder(l, 1).job(t, "festival", 12, 4)
	l.register(t, j)
	w := l.worker(t, "w1")
	pgtest.WaitFor(t, 10*time.Second, "a chunk in flight", func() bool { return l.chunkInFlight(t) })
	if got := l.nextIndex(t, j.ID); got != 0 {
		t.Fatalf("next_index %d before the first chunk committed", got)
	}

	w.Signal(t, syscall.SIGTERM)
	r := w.WaitWithin(t, 10*time.Second)
	if r.Code != 0 || r.Signal != 0 {
		t.Fatalf("want exit 0 after SIGTERM, got %v", r)
	}
	if !strings.Contains(r.Stdout, "worker w1 stopped: 1 chunk committed") {
		t.Fatalf("want the summary on stdout, got %v", r)
	}
	if got := l.nextIndex(t, j.ID); got != 4 {
		t.Fatalf("next_index %d after SIGTERM, want 4: the chunk in flight commits and no other starts", got)
	}
	if n := pgtest.MustInt(t, l.Conn, "select count(*) from job_audit"); n != 4 {
		t.Fatalf("%d audit rows, want 4", n)
	}
	// Back in the queue: runnable now, not paused.
	if got := pgtest.MustString(t, l.Conn, `select jsonb_build_object('visible', visible_at <= now(), 'paused', paused)::text
		from job_queue where job_id = $1`, j.ID); got != `{"paused": false, "visible": true}` {
		t.Fatalf("queue row after SIGTERM: %s", got)
	}
}

// A second signal cancels the chunk in flight: it rolls back, its job
// rests the retry delay, and the worker exits 1 saying it aborted.
func TestSecondSignalAbortsTheChunkInFlight(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.slowOrders(t, 1.5)
	j := newSeeder(l, 2).job(t, "festival", 8, 4)
	l.register(t, j)
	w := l.worker(t, "w1")
	pgtest.WaitFor(t, 10*time.Second, "a chunk in flight", func() bool { return l.chunkInFlight(t) })

	w.Signal(t, syscall.SIGTERM)
	w.WaitLine(t, 0, 5*time.Second, "finishing the chunks in flight")
	w.Signal(t, syscall.SIGINT)
	r := w.WaitWithin(t, 10*time.Second)
	if r.Code != 1 || !strings.Contains(r.Stderr, "chunks: worker w1: aborted: the chunks in flight were cancelled and rolled back") {
		t.Fatalf("want exit 1 with the abort on stderr, got %v", r)
	}
	pgtest.WaitFor(t, 5*time.Second, "the cancelled chunk to end", func() bool { return !l.chunkInFlight(t) })
	if got := l.nextIndex(t, j.ID); got != 0 {
		t.Fatalf("next_index %d after the abort, want 0 (rolled back)", got)
	}
	if n := pgtest.MustInt(t, l.Conn, "select count(*) from orders where state = 'cancelled'"); n != 0 {
		t.Fatalf("%d orders cancelled after the abort, want 0", n)
	}
	if got := pgtest.MustString(t, l.Conn, "select (not paused)::text from job_queue where job_id = $1", j.ID); got != "true" {
		t.Fatalf("the aborted job is not queued: %s", got)
	}
}

// A paused job is not touched while the others finish; after resume it
// finishes too. Pausing a job mid-run waits for its chunk in flight, and
// after pause returns the job does not move at all.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.slowOrders(t, 0.02)
	s := newSeeder(l, 3)
	var jobs []job
	for i, n := range []int{10, 20, 30} {
		j := s.job(t, fmt.Sprintf("other-%d", i), n, 2)
		l.register(t, j)
		jobs = append(jobs, j)
	}
	paused := s.job(t, "paused", 12, 3)
	l.register(t, paused)
	long := s.job(t, "long", 64, 1) // 64 chunks: still running when it is paused
	l.register(t, long)
	jobs = append(jobs, paused, long)

	if r := l.Chunks(t, "pause", paused.ID); r.Code != 0 || r.Stdout != "paused job paused: no worker starts a chunk of it until chunks resume paused\n" {
		t.Fatalf("pause: %v", r)
	}
	if r := l.Chunks(t, "pause", "--json", paused.ID); r.Code != 0 || r.Stdout != `{"changed":false,"job_id":"paused"}`+"\n" {
		t.Fatalf("pause again: %v", r)
	}

	if r := l.Chunks(t, "resume", "--json", "other-0"); r.Code != 0 || r.Stdout != `{"changed":false,"job_id":"other-0"}`+"\n" {
		t.Fatalf("resume a queued job: %v", r)
	}

	w1 := l.worker(t, "w1", "--concurrency", "2", "--poll", "100ms")
	w2 := l.worker(t, "w2", "--concurrency", "2", "--poll", "100ms")

	pgtest.WaitFor(t, 15*time.Second, "long to make progress", func() bool { return l.nextIndex(t, long.ID) >= 3 })
	if r := l.Chunks(t, "pause", long.ID); r.Code != 0 {
		t.Fatalf("pause long: %v", r)
	}
	at := l.nextIndex(t, long.ID)

	pgtest.WaitFor(t, 30*time.Second, "the unpaused jobs to finish", func() bool {
		return pgtest.MustInt(t, l.Conn, "select count(*) from job_shapes where job_id like 'other-%' and next_index < targets") == 0
	})
	time.Sleep(300 * time.Millisecond) // the workers poll every 100 ms: they had every chance
	if got := l.nextIndex(t, paused.ID); got != 0 {
		t.Fatalf("the paused job moved to next_index %d", got)
	}
	if got := l.nextIndex(t, long.ID); got != at {
		t.Fatalf("long moved from %d to %d after pause returned", at, got)
	}
	at = l.nextIndex(t, long.ID)
	st := l.status(t)
	if st[paused.ID].State != fleetapi.StatePaused || st[long.ID].State != fleetapi.StatePaused || st["other-0"].State != fleetapi.StateDone {
		t.Fatalf("status: %+v", st)
	}
	human := l.Chunks(t, "status", "--all")
	if human.Code != 0 || !strings.Contains(human.Stdout, "paused") || !strings.Contains(human.Stdout, "0/12") ||
		!strings.Contains(human.Stdout, "by "+l.operator.Name+": paused by an operator") ||
		!strings.Contains(human.Stdout, "5 jobs: 2 paused, 3 done; 0 rows drifted or missing") {
		t.Fatalf("chunks status: %v", human)
	}

	for _, id := range []string{paused.ID, long.ID} {
		if r := l.Chunks(t, "resume", id); r.Code != 0 || r.Stdout != "resumed job "+id+": it is queued again\n" {
			t.Fatalf("resume %s: %v", id, r)
		}
	}
	pgtest.WaitFor(t, 20*time.Second, "the resumed jobs to finish", func() bool { return l.allDone(t) })
	if at >= len(long.Targets) {
		t.Fatalf("long finished before it was resumed")
	}
	stopWorkers(t, w1, w2)
	l.wantFinished(t, jobs)

	// Operator errors: unknown and finished jobs are conflicts, a bad id is invalid.
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"pause", "nope"}, 3, "chunks: conflict: job nope: not found\n"},
		{[]string{"resume", "nope"}, 3, "chunks: conflict: job nope: not found\n"},
		{[]string{"pause", paused.ID}, 3, "chunks: conflict: job paused: already done (next_index 12 of 12); nothing to pause\n"},
		{[]string{"resume", paused.ID}, 3, "chunks: conflict: job paused: already done (next_index 12 of 12); nothing to resume\n"},
		{[]string{"pause", "no way"}, 2, `chunks: invalid: job_id: must be 1 to 64 ASCII letters, digits, _ or -, got "no way"` + "\n"},
		{[]string{"pause", "a", "--json"}, 2, "chunks: usage: flag --json after the job id: put flags before the job id (chunks pause [flags] JOB)\n"},
	} {
		if r := l.Chunks(t, c.args...); r.Code != c.code || r.Stderr != c.msg || r.Stdout != "" {
			t.Errorf("chunks %v: want exit %d and %q, got %v", c.args, c.code, c.msg, r)
		}
	}
}

// A job registered while the workers sleep (--poll 30s) is picked up at
// once: the NOTIFY that register sends in its transaction wakes them.
func TestNotifyWakesSleepingWorkers(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := newSeeder(l, 4)
	w1 := l.worker(t, "w1", "--poll", "30s")
	w2 := l.worker(t, "w2", "--poll", "30s")
	w1.WaitLine(t, 0, 10*time.Second, "msg=listening")
	w2.WaitLine(t, 0, 10*time.Second, "msg=listening")
	time.Sleep(300 * time.Millisecond) // their first look at the empty queue is over: they sleep

	var latencies []time.Duration
	for i := range 3 {
		j := s.job(t, fmt.Sprintf("late-%d", i), 4, 4)
		registered := time.Now()
		l.register(t, j)
		pgtest.WaitFor(t, 10*time.Second, "pickup", func() bool { return l.nextIndex(t, j.ID) > 0 })
		latency := time.Since(registered)
		latencies = append(latencies, latency)
		if latency > 2*time.Second {
			t.Errorf("job %s was picked up %s after register, want well under the 30 s poll", j.ID, latency)
		}
	}
	t.Logf("register -> first chunk committed, with NOTIFY: %v", latencies)
	stopWorkers(t, w1, w2)
}

// Notifications lost, polling works: a job made runnable without a NOTIFY
// (inserted into jobs and job_queue by hand in one transaction, which is
// what the 002 migration does for the jobs it queues on upgrade) is picked
// up within about one poll interval by a worker that is listening. And when
// the LISTEN connection itself is killed, the worker reconnects, listens
// again and picks up what was queued meanwhile.
func TestPollingWhenNotificationsAreLost(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := newSeeder(l, 5)
	const poll = 1500 * time.Millisecond
	w := l.worker(t, "w1", "--poll", poll.String())
	w.WaitLine(t, 0, 10*time.Second, "msg=listening")
	time.Sleep(300 * time.Millisecond)

	j := s.job(t, "silent", 4, 2)
	queued := time.Now()
	tx, err := l.Conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`insert into jobs (job_id, tenant, targets, chunk_size, next_index) select $1, $2, $3::jsonb, $4, 0`,
		`insert into job_approval (job_id, kind, tenant, chunk_size, targets_sha256, recorded_from)
		 select $1, 'cancel', $2, $4, targets_sha256($3::jsonb), 'migration'`,
		`insert into job_queue (job_id, visible_at) values ($1, now())`,
	} {
		args := []any{j.ID, j.Tenant, clitest.MustJSON(t, j.Targets), j.ChunkSize}
		if strings.Contains(sql, "job_queue") {
			args = args[:1]
		}
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	latency := pgtest.WaitFor(t, 10*time.Second, "pickup by polling", func() bool { return l.nextIndex(t, j.ID) > 0 })
	t.Logf("queued without NOTIFY -> first chunk committed: %s (poll %s)", time.Since(queued).Round(time.Millisecond), poll)
	if latency > poll+time.Second {
		t.Errorf("picked up after %s, want within about the %s poll", latency, poll)
	}

	// Kill the LISTEN connection; the job registered while it is down is
	// picked up once the listener is back (it wakes a pass when it
	// listens again) or by the poll, whichever comes first.
	mark := w.LineCount()
	var killed bool
	if err := l.Conn.QueryRow(ctx, `select coalesce(bool_or(pg_terminate_backend(pid)), false) from pg_stat_activity
		where application_name = $1 and query ilike 'listen %'`, l.Name).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate the LISTEN connection: %v %v", killed, err)
	}
	j2 := s.job(t, "during-reconnect", 4, 4)
	l.register(t, j2)
	pgtest.WaitFor(t, 10*time.Second, "pickup after the LISTEN connection died", func() bool { return l.nextIndex(t, j2.ID) > 0 })
	w.WaitLine(t, mark, 10*time.Second, "msg=listening")
	stopWorkers(t, w)
}

// Eight workers started at once on a fresh schema, each as a deployment
// would start it (chunks migrate, then chunks worker), all come up: the
// migrations race safely and no worker migrates.
func TestEightWorkersStartTogether(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	name := newSchemaDroppedAtEnd(t, admin)
	// A worker on a schema that was never migrated refuses to start.
	r := clitest.Run(t, "--dsn", pgtest.DSN(), "--schema", name, "worker")
	if r.Code != 1 || !strings.Contains(r.Stderr, "run chunks migrate for this schema first") {
		t.Fatalf("a worker on an unmigrated schema: %v", r)
	}

	var workers []*clitest.Proc
	for i := range 8 {
		id := fmt.Sprintf("w%d", i)
		script := `"$0" migrate --dsn "$1" --schema "$2" >/dev/null && exec "$0" worker --dsn "$1" --schema "$2" --id "$3"`
		p := clitest.Start(t, clitest.Options{Name: id, Under: []string{"/bin/sh", "-c", script}}, pgtest.DSN(), name, id)
		workers = append(workers, p)
	}
	for _, w := range workers {
		w.WaitLine(t, 0, 30*time.Second, "msg=ready", "worker="+w.Name)
	}
	dsn := pgtest.WithSearchPath(pgtest.DSN(), name)
	l := &lab{Lab: &clitest.Lab{Schema: &pgtest.Schema{Name: name, DSN: dsn, Conn: pgtest.Connect(t, dsn)}}}
	migrations, err := fs.Glob(chunkssql.Migrations(), "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if v := pgtest.MustInt(t, l.Conn, "select version from schema_version"); v != len(migrations) {
		t.Fatalf("schema_version %d, want %d (every migration)", v, len(migrations))
	}
	s := newSeeder(l, 8)
	var jobs []job
	for i := range 8 {
		j := s.job(t, fmt.Sprintf("j%d", i), 20, 3)
		l.register(t, j)
		jobs = append(jobs, j)
	}
	pgtest.WaitFor(t, 20*time.Second, "every job done", func() bool { return l.allDone(t) })
	stopWorkers(t, workers...)
	l.wantFinished(t, jobs)
	var ran []string
	for _, w := range workers {
		if slices.ContainsFunc(w.Lines(), func(s string) bool { return strings.Contains(s, "job done") }) {
			ran = append(ran, w.Name)
		}
	}
	t.Logf("workers that finished a job: %v", ran)
}

// Usage and flag errors exit 2 before connecting.
func TestWorkerUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"worker", "--concurrency", "0"}, "chunks: invalid: concurrency: must be between 1 and 64, got 0\n"},
		{[]string{"worker", "--rate", "-1"}, "chunks: invalid: rate: must be 0 (no limit) or between 1/86400 (one chunk a day) and 1000 chunks per second per job, got -1\n"},
		{[]string{"worker", "--rate", "1e-6"}, "chunks: invalid: rate: must be 0 (no limit) or between 1/86400 (one chunk a day) and 1000 chunks per second per job, got 1e-06\n"},
		{[]string{"worker", "--retry-delay", "25h"}, "chunks: invalid: retry_delay: must be between 1ms and 24h0m0s, got 25h0m0s\n"},
		{[]string{"worker", "--id", "evil\u202egnp"}, `chunks: invalid: --id: must be 1 to 63 printable ASCII characters (all that application_name keeps), got "evil\u202egnp"` + "\n"},
		{[]string{"worker", "extra"}, `chunks: usage: worker takes no arguments, got ["extra"]` + "\n"},
		{[]string{"status", "extra"}, `chunks: usage: status takes no arguments, got ["extra"]` + "\n"},
	} {
		args := append([]string{"--dsn", pgtest.DSN(), "--schema", "nowhere"}, c.args...)
		if r := clitest.Run(t, args...); r.Code != 2 || r.Stderr != c.msg || r.Stdout != "" {
			t.Errorf("chunks %v: want exit 2 and %q, got %v", c.args, c.msg, r)
		}
	}
	for _, cmd := range []string{"worker", "status", "pause", "resume"} {
		r := clitest.Run(t, cmd, "--help")
		if r.Code != 0 || !strings.Contains(r.Stdout, "Example:") || !strings.Contains(r.Stdout, "  chunks --schema lab "+cmd) {
			t.Errorf("chunks %s --help: want an example, got %v", cmd, r)
		}
	}
}
