package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	fleetapi "github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// replicated starts a primary of its own with one streaming standby that
// applies WAL delay late, and a lab on the primary. Both servers stop when
// the test ends.
func replicated(t *testing.T, delay time.Duration) (*lab, *localpg.Server, *localpg.Server) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	primary, err := localpg.Start(sctx, localpg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := primary.Stop(); err != nil {
			t.Errorf("stop the primary: %v", err)
		}
	})
	standby, err := primary.StartStandby(sctx, localpg.StandbyOptions{Name: "standby1", ApplyDelay: delay})
	if errors.Is(err, localpg.ErrMissingBinary) {
		// The pinned builds of the CI version matrix ship no pg_basebackup:
		// a property of those builds, not an optional tool, so a skip even
		// under CI (the machine's own PostgreSQL runs this test).
		t.Skipf("no streaming standby with these server binaries: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the primary: nothing waits for it then
		if err := standby.Stop(); err != nil {
			t.Errorf("stop the standby: %v", err)
		}
	})
	return labOn(t, primary.DSN()), primary, standby
}

// replayed waits until the standby has replayed everything the primary has
// written so far.
func replayed(t *testing.T, l *lab, standby *localpg.Server, within time.Duration) {
	t.Helper()
	lsn := pgtest.MustString(t, l.Conn, "select pg_current_wal_lsn()::text")
	conn := pgtest.Connect(t, standby.DSN())
	pgtest.WaitFor(t, within, "the standby to replay "+lsn, func() bool {
		return pgtest.MustString(t, conn, "select (pg_last_wal_replay_lsn() >= $1::pg_lsn)::text", lsn) == "true"
	})
}

// With a standby that applies WAL 2 s late and --max-replica-lag 500ms, the
// worker runs about one chunk per 2 s, where unthrottled it would finish the
// job at once; chunks status says it is throttled and names the replica.
// Once the delay is lifted the job finishes within seconds, exactly once.
func TestMaxReplicaLagHoldsTheWorker(t *testing.T) {
	t.Parallel()
	l, _, standby := replicated(t, 2*time.Second)
	j := newSeeder(l, 41).job(t, "festival", 12, 1)
	// The standby has replayed a write of ours: the server has measured
	// its replay lag (2 s), as it would have for any live standby.
	replayed(t, l, standby, 10*time.Second)
	l.register(t, j)
	replayed(t, l, standby, 10*time.Second)

	w := l.worker(t, "w1", "--max-replica-lag", "500ms", "--poll", "100ms")
	pgtest.WaitFor(t, 10*time.Second, "the first chunk", func() bool { return l.nextIndex(t, j.ID) >= 1 })
	first := time.Now()
	w.WaitLine(t, 0, 5*time.Second, "throttling: holding new chunks", "replica standby1 is")
	var st fleetapi.WorkerStatus
	pgtest.WaitFor(t, 5*time.Second, "chunks status to show the worker throttled", func() bool {
		list, err := fleetapi.Workers(ctx, l.Conn)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range list {
			if x.WorkerID == "w1" && x.State == "throttled" {
				st = x
				return true
			}
		}
		return false
	})
	if st.Reason == nil || !strings.HasPrefix(*st.Reason, "replica standby1 is ") || !strings.HasSuffix(*st.Reason, "behind (max 500ms)") {
		t.Fatalf("worker status: %+v", st)
	}
	human := l.Chunks(t, "status", "--all")
	if human.Code != 0 || !strings.Contains(human.Stdout, "throttled: replica standby1 is") {
		t.Fatalf("chunks status: %v", human)
	}
	// About one chunk per 2 s: in the 4 s after the first chunk, at most
	// three more (a chunk is held until the standby has replayed the one
	// before it, which takes 2 s).
	time.Sleep(4*time.Second - time.Since(first))
	if got := l.nextIndex(t, j.ID); got > 4 {
		t.Fatalf("next_index %d 4 s after the first chunk: the worker did not hold for the standby\n%s", got, strings.Join(w.Lines(), "\n"))
	}

	if err := standby.SetApplyDelay(ctx, 0); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitFor(t, 10*time.Second, "the job to finish once the standby keeps up", func() bool { return l.allDone(t) })
	w.WaitLine(t, 0, 5*time.Second, "throttling ended", "held_ms=")
	stopWorkers(t, w)
	l.wantFinished(t, []job{j})
}

// A caught-up standby that applies WAL at once never holds the worker.
func TestCaughtUpStandbyNeverHolds(t *testing.T) {
	t.Parallel()
	l, _, standby := replicated(t, 0)
	j := newSeeder(l, 42).job(t, "quick", 40, 1)
	replayed(t, l, standby, 10*time.Second)
	l.register(t, j)
	// 2 s, not less: on a loaded 2-core machine a healthy standby's replay
	// can take a few hundred milliseconds, which is not what this is about.
	w := l.worker(t, "w1", "--max-replica-lag", "2s", "--poll", "100ms")
	pgtest.WaitFor(t, 20*time.Second, "the job to finish", func() bool { return l.allDone(t) })
	stopWorkers(t, w)
	for _, line := range w.Lines() {
		if strings.Contains(line, "throttling") {
			t.Fatalf("the worker held new chunks for a caught-up standby: %s", line)
		}
	}
	l.wantFinished(t, []job{j})
}

// --throttle-query: true holds, false runs, and a query that fails holds
// and is logged.
func TestThrottleQuery(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.Exec(t, "create table hold (on_hold boolean not null)")
	l.Exec(t, "insert into hold values (true)")
	l.Exec(t, "grant select on hold to "+pgx.Identifier{l.operator.Name}.Sanitize()) // the query runs as the worker's role
	seed := newSeeder(l, 43)
	j := seed.job(t, "held", 6, 1)
	l.register(t, j)
	query := "select on_hold from " + pgx.Identifier{l.Name, "hold"}.Sanitize()
	w := l.worker(t, "w1", "--throttle-query", query, "--check-interval", "50ms", "--poll", "100ms")
	w.WaitLine(t, 0, 5*time.Second, "throttling: holding new chunks", "the throttle query returned true")
	time.Sleep(500 * time.Millisecond) // ten checks: every one of them held
	if got := l.nextIndex(t, j.ID); got != 0 {
		t.Fatalf("next_index %d while the throttle query returned true", got)
	}

	l.Exec(t, "update hold set on_hold = false")
	pgtest.WaitFor(t, 10*time.Second, "the job to finish once the query returns false", func() bool { return l.allDone(t) })
	w.WaitLine(t, 0, 5*time.Second, "throttling ended")

	// A query that fails holds (a new job waits) and says why. The job is
	// registered once the worker's pass has decided to hold on the failed
	// reading ("throttling: holding new chunks", with the failure as the
	// reason): from then on the pass waits in the pacer until a reading
	// succeeds. Not on the pacer's "reading the signals failed" line (the
	// one this test waited for before, by the table's name "hold" in its
	// error): a pass that the last good reading, under 50 ms before, let go
	// may still be on its way to the queue then, and on a busy machine it
	// took the job registered meanwhile (next_index 1 in CI). The pacer
	// decides before a chunk; it does not fence one already let go.
	mark := w.LineCount()
	l.Exec(t, "drop table hold")
	k := seed.job(t, "after-error", 3, 1)
	w.WaitLine(t, mark, 5*time.Second, "throttling: holding new chunks", "throttle query failed", "does not exist (SQLSTATE 42P01)")
	l.register(t, k)
	time.Sleep(300 * time.Millisecond) // six checks: every one of them held
	if got := l.nextIndex(t, k.ID); got != 0 {
		t.Fatalf("next_index %d while the throttle query fails\n%s", got, strings.Join(w.Lines()[mark:], "\n"))
	}

	// The query works again and returns false: the job runs to its end.
	l.Exec(t, "create table hold (on_hold boolean not null)")
	l.Exec(t, "insert into hold values (false)")
	l.Exec(t, "grant select on hold to "+pgx.Identifier{l.operator.Name}.Sanitize())
	pgtest.WaitFor(t, 10*time.Second, "the job to finish once the query works again", func() bool { return l.allDone(t) })
	w.WaitLine(t, mark, 5*time.Second, "throttling ended", "was=\"throttle query failed")
	stopWorkers(t, w)
	l.wantFinished(t, []job{j, k})
}

// A --throttle-query that would step out of its READ ONLY transaction
// ("select false; commit; insert ...") under a DSN asking for the simple
// protocol is refused by the extended protocol it is sent with: the worker
// holds and logs why, naming the flag, and nothing is inserted.
func TestThrottleQueryIsOneReadOnlyStatement(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.Exec(t, "create table probe (n int)")
	l.Exec(t, "grant insert on probe to "+pgx.Identifier{l.operator.Name}.Sanitize()) // only the transaction stands in the way
	j := newSeeder(l, 47).job(t, "held", 3, 1)
	l.register(t, j)
	query := "select false; commit; insert into " + pgx.Identifier{l.Name, "probe"}.Sanitize() + " values (1)"
	args := append(l.simpleProtocol(), "worker", "--id", "w1", "--verbose", "--throttle-query", query, "--check-interval", "50ms", "--poll", "100ms")
	w := clitest.Start(t, clitest.Options{Name: "w1"}, args...)
	w.WaitLine(t, 0, 20*time.Second, "throttling: holding new chunks", "throttle query failed", "--throttle-query", "must be one statement, got several")
	time.Sleep(300 * time.Millisecond) // six checks: every one of them held
	if got := fmt.Sprintf("%d %d", l.nextIndex(t, j.ID), pgtest.MustInt(t, l.Conn, "select count(*) from probe")); got != "0 0" {
		t.Fatalf("next_index, rows inserted by the throttle query: %s", got)
	}
	stopWorkers(t, w)
}

// chunks drain --max-replica-lag waits before each call the same way, and
// waiting is not a call: the drain still counts one call per chunk and
// retries nothing.
func TestMaxReplicaLagHoldsDrain(t *testing.T) {
	t.Parallel()
	l, _, standby := replicated(t, 2*time.Second)
	j := newSeeder(l, 45).job(t, "festival", 12, 1)
	l.register(t, j)
	replayed(t, l, standby, 10*time.Second)

	d := clitest.Start(t, clitest.Options{Name: "drain"}, append(l.Globals(), "--json", "drain", "--max-replica-lag", "500ms", j.ID)...)
	pgtest.WaitFor(t, 10*time.Second, "the first chunk", func() bool { return l.nextIndex(t, j.ID) >= 1 })
	first := time.Now()
	d.WaitLine(t, 0, 5*time.Second, "throttling: holding new chunks", "replica standby1 is")
	time.Sleep(4*time.Second - time.Since(first))
	if got := l.nextIndex(t, j.ID); got > 4 {
		t.Fatalf("next_index %d 4 s after the first chunk: the drain did not hold for the standby", got)
	}
	if err := standby.SetApplyDelay(ctx, 0); err != nil {
		t.Fatal(err)
	}
	r := d.WaitWithin(t, 20*time.Second)
	if r.Code != 0 {
		t.Fatalf("drain: %v", r)
	}
	var got driver.DrainResult
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatalf("drain --json: %v: %s", err, r.Stdout)
	}
	if got.Calls != 12 || !got.Done || got.NextIndex != 12 || len(got.Processed) != 12 {
		t.Fatalf("drain result %+v: want 12 calls, one per chunk, done", got)
	}
	l.Exec(t, "delete from job_queue") // drain does not use the queue
	l.wantFinished(t, []job{j})
}

// A throttle query that does not return holds the worker without holding
// its heartbeat: each reading is cut off after the read timeout (1 s here)
// and counts as a hold, chunks status shows the worker throttled with the
// reason while its heartbeat keeps beating, and SIGTERM stops it at once,
// 30 s before the query would have ended.
func TestStuckThrottleQueryHoldsButNotTheHeartbeat(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	j := newSeeder(l, 47).job(t, "stuck", 4, 1)
	l.register(t, j)
	w := l.worker(t, "w-stuck", "--throttle-query", "select pg_sleep(30) is not null", "--poll", "100ms")
	w.WaitLine(t, 0, 10*time.Second, "throttling: holding new chunks", "throttle query timed out after 1s")

	type live struct {
		Workers []fleetapi.WorkerStatus `json:"workers"`
	}
	var beats []time.Time
	pgtest.WaitFor(t, 15*time.Second, "three heartbeats of the throttled worker", func() bool {
		var st live
		r := l.Chunks(t, "--json", "status")
		if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
			t.Fatalf("status --json: %v: %s", err, r.Stdout)
		}
		if len(st.Workers) != 1 {
			t.Fatalf("status lists %d workers, want the one: %s", len(st.Workers), r.Stdout)
		}
		ws := st.Workers[0]
		if ws.State != "throttled" || ws.Reason == nil || !strings.Contains(*ws.Reason, "throttle query timed out") {
			return false
		}
		if len(beats) == 0 || ws.LastSeen.After(beats[len(beats)-1]) {
			beats = append(beats, ws.LastSeen)
		}
		time.Sleep(300 * time.Millisecond)
		return len(beats) >= 3
	})
	if got := l.nextIndex(t, j.ID); got != 0 {
		t.Fatalf("next_index %d while the throttle query never returned", got)
	}
	w.Signal(t, syscall.SIGTERM)
	stopped := time.Now()
	if r := w.WaitWithin(t, 20*time.Second); r.Code != 0 {
		t.Fatalf("want exit 0 after SIGTERM, got %v", r)
	}
	if took := time.Since(stopped); took > 10*time.Second {
		t.Fatalf("the worker took %v to stop after SIGTERM: it waited for the stuck throttle query", took)
	}
	if got := l.nextIndex(t, j.ID); got != 0 {
		t.Fatalf("next_index %d after SIGTERM: a chunk started while throttled", got)
	}
}
