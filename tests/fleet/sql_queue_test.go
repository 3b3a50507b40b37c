package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/tern/v2/migrate"

	"github.com/chunks-dev/chunks/driver"
	fleetapi "github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
	chunkssql "github.com/chunks-dev/chunks/sql"
)

// queueRow is a job's row in job_queue as text, or "<null>".
func (l *lab) queueRow(t testing.TB, jobID string) string {
	t.Helper()
	return pgtest.MustString(t, l.Conn, `select (select jsonb_build_object('paused', paused, 'visible_now', visible_at <= now(),
		'visible_at', visible_at, 'pause_reason', pause_reason, 'paused_by', paused_by)
		from job_queue where job_id = $1)::text`, jobID)
}

// pass is one run_next_chunk pass on conn, as a worker named worker with
// the given delays in milliseconds.
func pass(t testing.TB, conn *pgx.Conn, worker string, rateMS, retryMS int) *fleetapi.Pass {
	t.Helper()
	p, err := fleetapi.RunNext(ctx, conn, worker, fleetapi.PassOptions{Rate: time.Duration(rateMS) * time.Millisecond, Retry: time.Duration(retryMS) * time.Millisecond})
	if err != nil {
		t.Fatalf("run_next_chunk: %v", err)
	}
	return p
}

// newJobs registers jobs a, b, c, ... of n targets and chunk size cs, one
// after the other (so they queue in that order).
func newJobs(t testing.TB, l *lab, names string, n, cs int) []job {
	t.Helper()
	s := newSeeder(l, 9)
	var jobs []job
	for _, name := range strings.Split(names, " ") {
		j := s.job(t, name, n, cs)
		l.register(t, j)
		jobs = append(jobs, j)
	}
	return jobs
}

// register queues a new job, visible at once, in the same transaction, and
// notifies the schema's channel; registering the same plan again queues
// nothing and notifies nobody.
func TestSQLRegisterQueuesOnce(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	listener := pgtest.Connect(t, l.DSN)
	if _, err := listener.Exec(ctx, "listen "+pgx.Identifier{"chunks_" + l.Name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if got := pgtest.MustString(t, l.Conn, "select queue_channel()"); got != "chunks_"+l.Name {
		t.Fatalf("queue_channel() = %s", got)
	}

	j := newSeeder(l, 1).job(t, "a", 5, 2)
	// Inside an open transaction nothing is visible or notified yet.
	tx, err := l.Conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "select register($1::jsonb)", j.plan()); err != nil {
		t.Fatal(err)
	}
	other := pgtest.Connect(t, l.DSN)
	if got := pgtest.MustString(t, other, "select count(*)::text from job_queue"); got != "0" {
		t.Fatalf("the queue row is visible before commit: %s", got)
	}
	wantNoNotification(t, listener)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	n := waitNotification(t, listener)
	if n.Channel != "chunks_"+l.Name || n.Payload != "a" {
		t.Fatalf("notification %+v", n)
	}
	row := l.queueRow(t, "a")
	if !clitest.ContainsAll(row, `"paused": false`, `"pause_reason": null`, `"visible_now": true`) {
		t.Fatalf("queue row after register: %s", row)
	}

	// The same approval again: false, nothing queued, nobody woken.
	if got := pgtest.MustString(t, l.Conn, "select register($1::jsonb)::text", j.plan()); got != "false" {
		t.Fatalf("register again: %s", got)
	}
	if again := l.queueRow(t, "a"); again != row {
		t.Fatalf("register again changed the queue row:\n%s\n%s", row, again)
	}
	wantNoNotification(t, listener)

	// Even after a pass: re-registration leaves the queue row alone, and a
	// pass that puts the job back notifies nobody (the pass that ran it
	// goes on by itself).
	if p := pass(t, l.Conn, "w1", 60000, 0); p == nil || p.JobID != "a" {
		t.Fatalf("pass: %+v", p)
	}
	rested := l.queueRow(t, "a")
	if got := pgtest.MustString(t, l.Conn, "select register($1::jsonb)::text", j.plan()); got != "false" {
		t.Fatalf("register again: %s", got)
	}
	if again := l.queueRow(t, "a"); again != rested {
		t.Fatalf("register again changed the queue row:\n%s\n%s", rested, again)
	}
	wantNoNotification(t, listener)
	// A conflicting registration queues nothing either.
	bad := j
	bad.ChunkSize = 3
	if _, err := l.Conn.Exec(ctx, "select register($1::jsonb)", bad.plan()); err == nil {
		t.Fatal("a different plan under the same id was accepted")
	}
	if got := pgtest.MustInt(t, l.Conn, "select count(*) from job_queue"); got != 1 {
		t.Fatalf("%d queue rows", got)
	}
}

func waitNotification(t testing.TB, conn *pgx.Conn) *pgconn.Notification {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(wctx)
	if err != nil {
		t.Fatalf("no notification: %v", err)
	}
	return n
}

func wantNoNotification(t testing.TB, conn *pgx.Conn) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if n, err := conn.WaitForNotification(wctx); err == nil {
		t.Fatalf("unexpected notification %+v", n)
	}
	// A timed-out wait closes the connection in pgx; callers that wait
	// again use waitNotification, which needs it open: reconnecting here
	// would lose the LISTEN, so check it is still usable.
	if conn.IsClosed() {
		t.Fatal("the listening connection closed after a timed-out wait")
	}
}

// A pass takes the oldest runnable job, runs one chunk and puts the job
// back behind every job already waiting (fair), or removes it when it is
// done, in one transaction; a rate delay rests it. NULL when nothing is
// runnable.
func TestSQLRunNextChunk(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	jobs := newJobs(t, l, "a b c", 4, 2)

	var order []string
	for range 3 {
		p := pass(t, l.Conn, "w1", 0, 1000)
		order = append(order, p.JobID)
		if p.Err != "" || p.Done || p.NextIndex != 2 || len(p.Processed) != 2 {
			t.Fatalf("pass: %+v", p)
		}
	}
	if p := pass(t, l.Conn, "w1", 0, 1000); p.JobID != "a" {
		t.Fatalf("fourth pass took %+v, want a again", p)
	}
	order = append(order, "a")
	if strings.Join(order, " ") != "a b c a" {
		t.Fatalf("pass order %v, want a b c a", order)
	}
	// a is done: its queue row went in the same commit as its last chunk.
	if got := l.queueRow(t, "a"); got != "<null>" {
		t.Fatalf("a finished but is still queued: %s", got)
	}
	if got := pgtest.MustString(t, l.Conn, "select jsonb_agg(id order by ordinal)::text from job_audit where job_id = 'a'"); got != strings.ReplaceAll(clitest.MustJSON(t, ids(jobs[0])), ",", ", ") {
		t.Fatalf("audit of a: %s", got)
	}
	// A rate delay rests the job: the next pass takes c, then nothing.
	if p := pass(t, l.Conn, "w1", 60000, 1000); p.JobID != "b" || !p.Done {
		t.Fatalf("pass: %+v, want b's last chunk", p)
	}
	if p := pass(t, l.Conn, "w1", 60000, 1000); p.JobID != "c" || !p.Done {
		t.Fatalf("pass: %+v, want c's last chunk", p)
	}
	if p := pass(t, l.Conn, "w1", 0, 1000); p != nil {
		t.Fatalf("a pass with nothing runnable: %+v", p)
	}
	l.wantFinished(t, jobs)

	// The same in psql: the function answers NULL, and the session's settings are untouched.
	if got := pgtest.MustString(t, l.Conn, "select coalesce(run_next_chunk('psql')::text, 'null') || ' ' || current_setting('lock_timeout')"); got != "null 0" {
		t.Fatalf("run_next_chunk from psql: %s", got)
	}
}

func ids(j job) []int64 {
	var out []int64
	for _, target := range j.Targets {
		out = append(out, target.ID)
	}
	return out
}

// SKIP LOCKED: a pass in an open transaction holds its queue row; a second
// session's pass takes the next job at once instead of waiting. The claim
// ends with the transaction: after a rollback, nothing of the chunk is
// there and the job is runnable again.
func TestSQLRunNextSkipsLockedRows(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	newJobs(t, l, "a b", 4, 2)
	tx, err := l.Conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			t.Error(err)
		}
	}()
	var first string
	if err := tx.QueryRow(ctx, "select run_next_chunk('w1') ->> 'job_id'").Scan(&first); err != nil || first != "a" {
		t.Fatalf("pass in tx: %q %v", first, err)
	}
	// Had the second pass waited for the locked row, it would wait until
	// tx ends, which is only after it: lock_timeout turns that into an
	// error (55P03). No stopwatch needed.
	other := pgtest.Connect(t, l.DSN)
	if _, err := other.Exec(ctx, "set lock_timeout = '1s'"); err != nil {
		t.Fatal(err)
	}
	if p := pass(t, other, "w2", 60000, 1000); p == nil || p.JobID != "b" || p.Err != "" {
		t.Fatalf("the second session's pass: %+v, want b", p)
	}
	if p := pass(t, other, "w2", 0, 1000); p != nil {
		t.Fatalf("third pass: %+v, want none (a is locked, b rests)", p)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := l.nextIndex(t, "a"); got != 0 {
		t.Fatalf("a's rolled-back chunk left next_index %d", got)
	}
	if p := pass(t, other, "w2", 0, 1000); p == nil || p.JobID != "a" || p.NextIndex != 2 {
		t.Fatalf("after the rollback: %+v, want a's first chunk", p)
	}
}

// A conflict rolls the chunk back and pauses the job in the same
// transaction, with the reason; so does a queue row whose job no chunk can
// run. resume clears the reason.
func TestSQLRunNextPausesOnConflict(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	jobs := newJobs(t, l, "a", 4, 2)
	l.Exec(t, "update orders set state = 'paid', revision = revision + 1 where id = $1", jobs[0].Targets[1].ID)
	before := pgtest.MustString(t, l.Conn, "select jsonb_agg(o order by id)::text from orders o")
	p := pass(t, l.Conn, "w-7", 0, 1000)
	if p == nil || p.JobID != "a" || !p.Paused || p.SQLState != "CH409" ||
		!strings.Contains(p.Err, fmt.Sprint("order ", jobs[0].Targets[1].ID)) || len(p.Processed) != 0 {
		t.Fatalf("pass: %+v, want a conflict naming order %d", p, jobs[0].Targets[1].ID)
	}
	if after := pgtest.MustString(t, l.Conn, "select jsonb_agg(o order by id)::text from orders o"); after != before {
		t.Fatalf("the conflicting chunk changed orders:\n%s\n%s", before, after)
	}
	if n := pgtest.MustInt(t, l.Conn, "select count(*) from job_audit"); n != 0 || l.nextIndex(t, "a") != 0 {
		t.Fatalf("the conflicting chunk left %d audit rows, next_index %d", n, l.nextIndex(t, "a"))
	}
	s := l.status(t)["a"]
	if s.State != fleetapi.StatePaused || s.PauseReason == nil || *s.PauseReason != p.Err || s.PausedBy == nil ||
		*s.PausedBy != "w-7" || s.PausedAt == nil {
		t.Fatalf("status after the conflict: %+v", s)
	}
	if p := pass(t, l.Conn, "w-7", 0, 1000); p != nil {
		t.Fatalf("a paused job ran: %+v", p)
	}
	if ok, err := fleetapi.Resume(ctx, l.Conn, driver.JobRef{ID: "a"}); err != nil || !ok {
		t.Fatalf("resume: %v %v", ok, err)
	}
	if row := l.queueRow(t, "a"); !clitest.ContainsAll(row, `"paused": false`, `"pause_reason": null`, `"paused_by": null`) {
		t.Fatalf("after resume: %s", row)
	}

	// A job row that no chunk can run (an id that is not valid, inserted
	// by hand): paused with the reason instead of failing every pass.
	l.Exec(t, `insert into jobs (job_id, tenant, targets, chunk_size, next_index) values ('bad id', 't', '[]', 1, 0)`)
	l.Exec(t, `delete from job_queue`)
	l.Exec(t, `insert into job_queue (job_id, visible_at) values ('bad id', now())`)
	p = pass(t, l.Conn, "w-7", 0, 1000)
	if p == nil || p.JobID != "bad id" || !p.Paused || p.SQLState != "22023" || !strings.HasPrefix(p.Err, "job_id: must be") {
		t.Fatalf("pass over a bad row: %+v", p)
	}
	if p := pass(t, l.Conn, "w-7", 0, 1000); p != nil {
		t.Fatalf("the bad row ran again: %+v", p)
	}
}

// Any other error of the chunk (here a lock wait over 500 ms: someone else
// holds the job row, as chunks drain does) rolls the chunk back and rests
// the job for the retry delay, recorded in the same commit.
func TestSQLRunNextRestsOnTransientError(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	newJobs(t, l, "a", 4, 2)
	holder := pgtest.Connect(t, l.DSN)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "select from jobs where job_id = 'a' for update"); err != nil {
		t.Fatal(err)
	}
	p := pass(t, l.Conn, "w1", 0, 60000)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if p == nil || p.JobID != "a" || p.Paused || p.SQLState != "55P03" || p.RestMs != 60000 || len(p.Processed) != 0 {
		t.Fatalf("pass: %+v, want 55P03 and a rest of 60000 ms", p)
	}
	if row := l.queueRow(t, "a"); !clitest.ContainsAll(row, `"paused": false`, `"visible_now": false`) {
		t.Fatalf("queue row after the rest: %s", row)
	}
	if p := pass(t, l.Conn, "w1", 0, 60000); p != nil || l.nextIndex(t, "a") != 0 {
		t.Fatalf("a resting job ran: %+v, next_index %d", p, l.nextIndex(t, "a"))
	}
}

// A paused job is never run; pause waits for a pass that is inside a chunk
// of the job, so once it returns nothing of the job runs. Bad input and
// unknown jobs are refused naming the field or the job.
func TestSQLPausedIsNeverRun(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	newJobs(t, l, "a b", 6, 2)
	if ok, err := fleetapi.Pause(ctx, l.Conn, driver.JobRef{ID: "a"}); err != nil || !ok {
		t.Fatalf("pause a: %v %v", ok, err)
	}
	if ok, err := fleetapi.Pause(ctx, l.Conn, driver.JobRef{ID: "a"}); err != nil || ok {
		t.Fatalf("pause a again: %v %v, want false", ok, err)
	}
	if row := l.queueRow(t, "a"); !clitest.ContainsAll(row, `"paused": true`, `"pause_reason": "paused by an operator"`, `"paused_by": "postgres"`) {
		t.Fatalf("paused row: %s", row)
	}
	if p := pass(t, l.Conn, "w1", 0, 1000); p == nil || p.JobID != "b" {
		t.Fatalf("pass: %+v, want b", p)
	}

	// A pass in flight on b (an open transaction holds its chunk): pause b
	// waits for it, then holds.
	inflight := pgtest.Connect(t, l.DSN)
	tx, err := inflight.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := tx.QueryRow(ctx, "select run_next_chunk('w1') ->> 'job_id'").Scan(&got); err != nil || got != "b" {
		t.Fatalf("pass in flight: %q %v", got, err)
	}
	watcher := pgtest.Connect(t, l.DSN)
	paused := make(chan error, 1)
	go func() {
		_, err := fleetapi.Pause(ctx, l.Conn, driver.JobRef{ID: "b"})
		paused <- err
	}()
	pgtest.WaitFor(t, 5*time.Second, "pause waits for the pass in flight", func() bool {
		return pgtest.MustInt(t, watcher, `select count(*) from pg_stat_activity
			where query like '%pause_job%' and wait_event_type = 'Lock' and datname = current_database()`) > 0
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-paused; err != nil {
		t.Fatalf("pause b: %v", err)
	}
	if got := l.nextIndex(t, "b"); got != 4 {
		t.Fatalf("b: next_index %d, want 4 (the pass in flight committed)", got)
	}
	if p := pass(t, l.Conn, "w1", 0, 1000); p != nil {
		t.Fatalf("a pass after both pauses: %+v", p)
	}
	if ok, err := fleetapi.Resume(ctx, l.Conn, driver.JobRef{ID: "a"}); err != nil || !ok {
		t.Fatalf("resume a: %v %v", ok, err)
	}
	if ok, err := fleetapi.Resume(ctx, l.Conn, driver.JobRef{ID: "a"}); err != nil || ok {
		t.Fatalf("resume a again: %v %v, want false", ok, err)
	}
	if p := pass(t, l.Conn, "w1", 0, 1000); p == nil || p.JobID != "a" {
		t.Fatalf("pass after resume: %+v, want a", p)
	}

	long := strings.Repeat("w", 1000000)
	for _, c := range []struct {
		sql  string
		args []any
		code string
		msg  string
	}{
		{"select pause_job('nope')", nil, "CH409", "job nope: not found"},
		{"select resume_job('nope')", nil, "CH409", "job nope: not found"},
		{"select pause_job('no way')", nil, "22023", `job_id: must be 1 to 64 ASCII letters, digits, _ or -, got "no way"`},
		{"select run_next_chunk('')", nil, "22023", `worker: must be 1 to 63 printable ASCII characters (all that application_name keeps), got ""`},
		{"select run_next_chunk(null)", nil, "22023", "worker: must be 1 to 63 printable ASCII characters (all that application_name keeps), got null"},
		{"select run_next_chunk($1)", []any{"evil\u202egnp.exe"}, "22023", "worker: must be 1 to 63 printable ASCII characters (all that application_name keeps), got \"evil\u202egnp.exe\""},
		{"select run_next_chunk($1)", []any{"a\x1b[2Jb"}, "22023", `worker: must be 1 to 63 printable ASCII characters (all that application_name keeps), got "a\u001b[2Jb"`},
		{"select run_next_chunk($1)", []any{long}, "22023", `worker: must be 1 to 63 printable ASCII characters (all that application_name keeps), got "` + long[:64] + `"… (1000000 characters)`},
		{"select run_next_chunk('w', -1)", nil, "22023", "rate_delay_ms: must be between 0 and 86400000 (a day), got -1"},
		{"select run_next_chunk('w', 0, 86400001)", nil, "22023", "retry_delay_ms: must be between 0 and 86400000 (a day), got 86400001"},
	} {
		_, err := l.Conn.Exec(ctx, c.sql, c.args...)
		pgtest.WantPgError(t, err, c.code, c.msg)
	}
	_, err = fleetapi.Pause(ctx, l.Conn, driver.JobRef{ID: "nope"})
	if !errors.Is(err, driver.ErrConflict) || err.Error() != "conflict: job nope: not found" {
		t.Fatalf("fleet.Pause of an unknown job: %v", err)
	}
}

// A finished job is never queued again: not by a pass, re-registration,
// pause or resume. A job finished outside the fleet (chunks drain) leaves
// its row behind until a pass learns it is done and removes it.
func TestSQLFinishedIsNeverQueuedAgain(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	jobs := newJobs(t, l, "a b", 2, 2)
	if p := pass(t, l.Conn, "w1", 0, 1000); p == nil || p.JobID != "a" || !p.Done {
		t.Fatalf("pass: %+v", p)
	}
	l.Exec(t, "select run_chunk('b')") // b finished without the fleet: its row stays
	if got := l.queueRow(t, "b"); got == "<null>" {
		t.Fatal("b's row vanished")
	}
	if got := l.status(t)["b"].State; got != fleetapi.StateDone {
		t.Fatalf("status of b: %s", got)
	}
	if p := pass(t, l.Conn, "w1", 0, 1000); p == nil || p.JobID != "b" || !p.Done || len(p.Processed) != 0 || p.NextIndex != 2 {
		t.Fatalf("pass over the finished b: %+v", p)
	}
	for _, j := range jobs {
		if got := pgtest.MustString(t, l.Conn, "select register($1::jsonb)::text", j.plan()); got != "false" {
			t.Fatalf("register %s again: %s", j.ID, got)
		}
		for _, op := range []string{"pause", "resume"} {
			_, err := l.Conn.Exec(ctx, fmt.Sprintf("select %s_job($1)", op), j.ID)
			pgtest.WantPgError(t, err, "CH409", fmt.Sprintf("job %s: already done (next_index 2 of 2); nothing to %s", j.ID, op))
		}
	}
	if n := pgtest.MustInt(t, l.Conn, "select count(*) from job_queue"); n != 0 {
		t.Fatalf("%d rows queued for finished jobs", n)
	}
	if p := pass(t, l.Conn, "w1", 0, 1000); p != nil {
		t.Fatalf("pass: %+v", p)
	}
}

// job_status: every state, the session a chunk in flight runs in, the pause
// reason, and the drift count of report.
func TestSQLJobStatus(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	if list, err := fleetapi.Status(ctx, l.Conn); err != nil || list == nil || len(list) != 0 {
		t.Fatalf("status of no jobs: %#v %v", list, err)
	}
	jobs := newJobs(t, l, "done running paused queued idle", 4, 2)
	l.Exec(t, "select run_chunk('done')")
	l.Exec(t, "select run_chunk('done')")
	l.Exec(t, "delete from job_queue where job_id = 'done'")
	if _, err := fleetapi.Pause(ctx, l.Conn, driver.JobRef{ID: "paused"}); err != nil {
		t.Fatal(err)
	}
	l.Exec(t, "delete from job_queue where job_id = 'idle'")
	// Drift: one committed order of done changed since, one deleted.
	l.Exec(t, "update orders set qty = qty + 1, revision = revision + 1 where id = $1", jobs[0].Targets[0].ID)
	l.Exec(t, "delete from orders where id = $1", jobs[0].Targets[3].ID)
	// A chunk in flight: a pass inside an open transaction, in a session
	// named like a worker.
	worker := pgtest.Connect(t, l.DSN+" application_name=worker-9")
	tx, err := worker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tx.Rollback(ctx); err != nil {
			t.Error(err)
		}
	}()
	var got string
	if err := tx.QueryRow(ctx, "select run_next_chunk('worker-9') ->> 'job_id'").Scan(&got); err != nil || got != "running" {
		t.Fatalf("pass: %q %v", got, err)
	}

	st := l.status(t)
	for id, want := range map[string]string{"done": "done", "running": "running", "paused": "paused", "queued": "queued", "idle": "idle"} {
		if st[id].State != want || st[id].N != 4 {
			t.Errorf("%s: %+v, want state %s", id, st[id], want)
		}
	}
	if d := st["done"].Drift; d == nil || *d != 2 || st["done"].NextIndex != 4 {
		t.Errorf("done: drift %v, want 2", st["done"].Drift)
	}
	if s := st["running"]; s.RunningIn == nil || *s.RunningIn != "worker-9" || s.NextIndex != 0 {
		t.Errorf("running: %+v", s)
	}
	if s := st["paused"]; s.PauseReason == nil || *s.PauseReason != "paused by an operator" || s.PausedAt == nil || s.RunningIn != nil {
		t.Errorf("paused: %+v", s)
	}
	if s := st["queued"]; s.VisibleAt == nil || s.RunningIn != nil || s.PauseReason != nil || s.Drift == nil || *s.Drift != 0 {
		t.Errorf("queued: %+v", s)
	}
	// resume queues an idle job.
	if ok, err := fleetapi.Resume(ctx, l.Conn, driver.JobRef{ID: "idle"}); err != nil || !ok {
		t.Fatalf("resume idle: %v %v", ok, err)
	}
	if got := l.status(t)["idle"].State; got != fleetapi.StateQueued {
		t.Fatalf("idle after resume: %s", got)
	}
	// A job whose stored targets cannot be read has no drift count.
	l.Exec(t, `update jobs set targets = '{"id": 1}' where job_id = 'queued'`)
	if s := l.status(t)["queued"]; s.Drift != nil || s.State != fleetapi.StateQueued {
		t.Fatalf("unreadable job: %+v", s)
	}
	// The same job ids in another schema of the database never look running.
	other := newLab(t)
	newJobs(t, other, "running", 4, 2)
	if s := other.status(t)["running"]; s.State != fleetapi.StateQueued {
		t.Fatalf("another schema's job of the same id: %+v", s)
	}
}

// Upgrading a schema from version 1 (before the queue) queues every
// unfinished job, visible at once, and no finished one.
func TestSQLUpgradeQueuesUnfinishedJobs(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	name := oldSchema(t, admin, 1)
	targets := `[{"id": 1, "qty": 1, "revision": 0}, {"id": 2, "qty": 1, "revision": 0}]`
	if _, err := admin.Exec(ctx, `insert into `+name+`.jobs (job_id, tenant, targets, chunk_size, next_index)
		values ('fresh', 't', $1, 1, 0), ('half', 't', $1, 1, 1), ('finished', 't', $1, 1, 2)`, targets); err != nil {
		t.Fatal(err)
	}
	if err := driver.Migrate(ctx, admin, name, driver.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := pgtest.MustString(t, admin, `select jsonb_agg(jsonb_build_array(job_id, visible_at <= now(), paused) order by job_id)::text
		from `+name+`.job_queue`)
	if got != `[["fresh", true, false], ["half", true, false]]` {
		t.Fatalf("queue after the upgrade: %s", got)
	}
	// Migrating again is a no-op: nothing queued twice, nothing re-queued.
	l := &lab{Lab: &clitest.Lab{Schema: &pgtest.Schema{Name: name, DSN: pgtest.WithSearchPath(pgtest.DSN(), name)}}}
	l.Conn = pgtest.Connect(t, l.DSN)
	if p := pass(t, l.Conn, "w1", 0, 1000); p == nil || p.JobID != "fresh" {
		t.Fatalf("pass after the upgrade: %+v", p)
	}
	before := pgtest.MustString(t, admin, "select jsonb_agg(q order by job_id)::text from "+name+".job_queue q")
	if err := driver.Migrate(ctx, admin, name, driver.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if after := pgtest.MustString(t, admin, "select jsonb_agg(q order by job_id)::text from "+name+".job_queue q"); after != before {
		t.Fatalf("migrate again changed the queue:\n%s\n%s", before, after)
	}
}

// Upgrading a schema from version 2 (the queue with leases) keeps every
// queued and paused job as it was: a paused job stays paused, a resting one
// keeps its visible_at, and a leased one is runnable at once (its lease
// meant nothing to the new pass). The lease columns and functions are gone.
func TestSQLUpgradeKeepsQueuedAndPausedJobs(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	name := oldSchema(t, admin, 2)
	if _, err := admin.Exec(ctx, `insert into `+name+`.jobs (job_id, tenant, targets, chunk_size, next_index)
		select j.id, 't', jsonb_build_array(jsonb_build_object('id', 2 * j.k - 1, 'qty', 1, 'revision', 0),
		                                    jsonb_build_object('id', 2 * j.k, 'qty', 1, 'revision', 0)), 1, 0
		  from (values ('queued', 1), ('paused', 2), ('leased', 3), ('resting', 4)) as j(id, k)`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `insert into `+name+`.job_queue (job_id, visible_at, receipt, leased_by, paused) values
		('queued', now() - interval '1 minute', 0, null, false),
		('paused', now() - interval '1 minute', 3, null, true),
		('leased', now() + interval '1 hour', 7, 'old-worker', false),
		('resting', '2999-01-01', 8, null, false)`); err != nil {
		t.Fatal(err)
	}
	if err := driver.Migrate(ctx, admin, name, driver.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := pgtest.MustString(t, admin, `select jsonb_agg(jsonb_build_array(job_id, visible_at <= now(), paused,
		visible_at = '2999-01-01') order by job_id)::text from `+name+`.job_queue`)
	if got != `[["leased", true, false, false], ["paused", true, true, false], ["queued", true, false, false], ["resting", false, false, true]]` {
		t.Fatalf("queue after the upgrade: %s", got)
	}
	gone := pgtest.MustString(t, admin, `select jsonb_build_array(
		  (select count(*) from pg_attribute where attrelid = $1::regclass and attname in ('receipt', 'leased_by') and not attisdropped),
		  to_regprocedure($2), to_regprocedure($3), to_regclass($4))::text`,
		name+".job_queue", name+".claim_job(text, integer)", name+".release_job(text, bigint, boolean, integer)", name+".job_queue_receipt")
	if gone != `[0, null, null, null]` {
		t.Fatalf("the lease machinery is still there: %s", gone)
	}
	// The new pass runs what is runnable, oldest first, and leaves the
	// paused and resting jobs alone.
	conn := pgtest.Connect(t, pgtest.WithSearchPath(pgtest.DSN(), name))
	if _, err := conn.Exec(ctx, "insert into orders select g, 't', 1, 'pending', 0 from generate_series(1, 8) g"); err != nil {
		t.Fatal(err)
	}
	var order []string
	for {
		p := pass(t, conn, "w1", 0, 1000)
		if p == nil {
			break
		}
		order = append(order, p.JobID)
		if p.Err != "" || len(order) > 10 {
			t.Fatalf("pass: %+v", p)
		}
	}
	if strings.Join(order, " ") != "queued leased queued leased" {
		t.Fatalf("passes after the upgrade: %v, want queued leased queued leased", order)
	}
}

// oldSchema is a new schema migrated only up to version, as an earlier
// release left it (tables only: no functions), dropped when the test ends.
func oldSchema(t testing.TB, admin *pgx.Conn, version int32) string {
	t.Helper()
	name := newSchemaDroppedAtEnd(t, admin)
	if _, err := admin.Exec(ctx, "create schema "+name); err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewMigrator(ctx, admin, name+".schema_version")
	if err != nil {
		t.Fatal(err)
	}
	m.Data = map[string]any{"schema": name}
	if err := m.LoadMigrations(chunkssql.Migrations()); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	return name
}

// newSchemaDroppedAtEnd is a fresh schema name whose schema, if made, is
// dropped when the test ends.
func newSchemaDroppedAtEnd(t testing.TB, admin *pgx.Conn) string {
	t.Helper()
	name := pgtest.NewSchemaName(t)
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "drop schema if exists "+pgx.Identifier{name}.Sanitize()+" cascade"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}
