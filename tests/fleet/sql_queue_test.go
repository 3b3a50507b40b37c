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
	"github.com/chunks-dev/chunks/internal/pgtest"
	chunkssql "github.com/chunks-dev/chunks/sql"
)

// queueRow is a job's row in job_queue as text, or "<null>".
func (l *lab) queueRow(t testing.TB, jobID string) string {
	t.Helper()
	return mustString(t, l.Conn, `select (select jsonb_build_object('receipt', receipt, 'leased_by', leased_by,
		'paused', paused, 'visible_now', visible_at <= now(), 'visible_at', visible_at)
		from job_queue where job_id = $1)::text`, jobID)
}

// claim is claim_job on conn.
func claim(t testing.TB, conn *pgx.Conn, worker string, leaseMS int) *fleetapi.Claim {
	t.Helper()
	c, err := fleetapi.ClaimJob(ctx, conn, worker, time.Duration(leaseMS)*time.Millisecond)
	if err != nil {
		t.Fatalf("claim_job: %v", err)
	}
	return c
}

func release(t testing.TB, conn *pgx.Conn, c fleetapi.Claim, done bool, delayMS int) bool {
	t.Helper()
	ok, err := fleetapi.ReleaseJob(ctx, conn, c, done, time.Duration(delayMS)*time.Millisecond)
	if err != nil {
		t.Fatalf("release_job(%+v, %v, %d): %v", c, done, delayMS, err)
	}
	return ok
}

// wantPgError fails unless err is a server error with exactly code and msg.
func wantPgError(t testing.TB, err error, code, msg string) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != code || pgErr.Message != msg {
		t.Fatalf("want SQLSTATE %s %q, got %v", code, msg, err)
	}
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
	if got := mustString(t, l.Conn, "select queue_channel()"); got != "chunks_"+l.Name {
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
	if got := mustString(t, other, "select count(*)::text from job_queue"); got != "0" {
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
	if !containsAll(row, []string{`"paused": false`, `"receipt": 0`, `"leased_by": null`, `"visible_now": true`}) {
		t.Fatalf("queue row after register: %s", row)
	}

	// The same approval again: false, nothing queued, nobody woken.
	if got := mustString(t, l.Conn, "select register($1::jsonb)::text", j.plan()); got != "false" {
		t.Fatalf("register again: %s", got)
	}
	if again := l.queueRow(t, "a"); again != row {
		t.Fatalf("register again changed the queue row:\n%s\n%s", row, again)
	}
	wantNoNotification(t, listener)

	// Even while leased: re-registration leaves the lease alone.
	c := claim(t, l.Conn, "w1", 60000)
	leased := l.queueRow(t, "a")
	if got := mustString(t, l.Conn, "select register($1::jsonb)::text", j.plan()); got != "false" {
		t.Fatalf("register again: %s", got)
	}
	if again := l.queueRow(t, "a"); again != leased {
		t.Fatalf("register again changed the leased row:\n%s\n%s", leased, again)
	}
	if !release(t, l.Conn, *c, false, 0) {
		t.Fatal("release failed")
	}
	if n := waitNotification(t, listener); n.Payload != "a" {
		t.Fatalf("release notification %+v", n)
	}
	// A conflicting registration queues nothing either.
	bad := j
	bad.ChunkSize = 3
	if _, err := l.Conn.Exec(ctx, "select register($1::jsonb)", bad.plan()); err == nil {
		t.Fatal("a different plan under the same id was accepted")
	}
	if got := mustInt(t, l.Conn, "select count(*) from job_queue"); got != 1 {
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

// A claim takes the oldest visible job with a new receipt; a release acts
// only with the receipt of the current lease. A stale receipt (the lease
// ran out and someone else claimed the job) changes nothing.
func TestSQLClaimAndReleaseReceipts(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	newJobs(t, l, "a b c", 4, 2)

	first := claim(t, l.Conn, "w1", 60000)
	if first == nil || first.JobID != "a" || first.Receipt < 1 {
		t.Fatalf("first claim %+v, want job a with a receipt", first)
	}
	if row := l.queueRow(t, "a"); !strings.Contains(row, `"leased_by": "w1"`) || !strings.Contains(row, `"visible_now": false`) {
		t.Fatalf("leased row: %s", row)
	}
	// Fair: a chunk's job goes back behind every job already waiting.
	if !release(t, l.Conn, *first, false, 0) {
		t.Fatal("release with the current receipt failed")
	}
	var order []string
	var claims []fleetapi.Claim
	for range 3 {
		c := claim(t, l.Conn, "w1", 60000)
		order = append(order, c.JobID)
		claims = append(claims, *c)
	}
	if strings.Join(order, " ") != "b c a" {
		t.Fatalf("claim order %v, want b c a", order)
	}
	if c := claim(t, l.Conn, "w1", 60000); c != nil {
		t.Fatalf("claim with every job leased: %+v", c)
	}
	again := claims[2]
	if again.Receipt <= first.Receipt {
		t.Fatalf("receipt %d after %d: want a new, larger one", again.Receipt, first.Receipt)
	}

	// The old receipt of a does nothing, whatever it asks for.
	before := l.queueRow(t, "a")
	if release(t, l.Conn, *first, false, 0) || release(t, l.Conn, *first, false, 5000) {
		t.Fatal("a stale receipt released the job")
	}
	if _, err := l.Conn.Exec(ctx, "select run_chunk('a')"); err != nil {
		t.Fatal(err)
	}
	if after := l.queueRow(t, "a"); after != before {
		t.Fatalf("a stale receipt changed the row:\n%s\n%s", before, after)
	}

	// A lease that runs out makes the job claimable again; the old holder's
	// release is then stale.
	short := claims[0] // job b
	if !release(t, l.Conn, short, false, 0) {
		t.Fatal("release b")
	}
	lapsed := claim(t, l.Conn, "slow", 1)
	if lapsed == nil || lapsed.JobID != "b" {
		t.Fatalf("claim b: %+v", lapsed)
	}
	time.Sleep(20 * time.Millisecond)
	taker := claim(t, l.Conn, "taker", 60000)
	if taker == nil || taker.JobID != "b" || taker.Receipt <= lapsed.Receipt {
		t.Fatalf("take over b after its lease: %+v", taker)
	}
	if release(t, l.Conn, *lapsed, false, 0) {
		t.Fatal("the lapsed lease released b after it was taken over")
	}
	if row := l.queueRow(t, "b"); !strings.Contains(row, `"leased_by": "taker"`) {
		t.Fatalf("b after the stale release: %s", row)
	}

	// A delay keeps the job out of reach until it ends.
	if !release(t, l.Conn, *taker, false, 60000) {
		t.Fatal("release b with a delay")
	}
	if c := claim(t, l.Conn, "w1", 60000); c != nil {
		t.Fatalf("claimed %+v during a delay", c)
	}

	// done is refused for an unfinished job, and removes a finished one.
	_, err := fleetapi.ReleaseJob(ctx, l.Conn, claims[1], true, 0) // c: next_index 0
	wantPgError(t, err, "22023", "done: job c is not finished (next_index 0 of 4)")
	if !errors.Is(err, driver.ErrInvalid) {
		t.Fatalf("want driver.ErrInvalid, got %v", err)
	}
	l.Exec(t, "select run_chunk('c')")
	l.Exec(t, "select run_chunk('c')")
	if !release(t, l.Conn, claims[1], true, 0) {
		t.Fatal("release c done")
	}
	if got := l.queueRow(t, "c"); got != "<null>" {
		t.Fatalf("a finished job is still queued: %s", got)
	}
}

// SKIP LOCKED: a claim in an open transaction holds its row; a second
// session's claim takes the next job at once instead of waiting.
func TestSQLClaimSkipsLockedRows(t *testing.T) {
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
	if err := tx.QueryRow(ctx, "select claim_job('w1', 60000) ->> 'job_id'").Scan(&first); err != nil || first != "a" {
		t.Fatalf("claim in tx: %q %v", first, err)
	}
	// Had the second claim waited for the locked row, it would wait until
	// tx ends, which is only after it: lock_timeout turns that into an
	// error (55P03) that fails the claim. No stopwatch needed.
	other := pgtest.Connect(t, l.DSN)
	if _, err := other.Exec(ctx, "set lock_timeout = '1s'"); err != nil {
		t.Fatal(err)
	}
	c := claim(t, other, "w2", 60000)
	if c == nil || c.JobID != "b" {
		t.Fatalf("the second session claimed %+v, want b", c)
	}
	if c := claim(t, other, "w2", 60000); c != nil {
		t.Fatalf("third claim: %+v, want none (a is locked, b leased)", c)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The rolled-back claim left a as it was: claimable.
	if c := claim(t, other, "w2", 60000); c == nil || c.JobID != "a" {
		t.Fatalf("after the rollback: %+v, want a", c)
	}
}

// A paused job is never claimed; resume queues it again. Pause and resume
// of unknown or finished jobs are conflicts naming the job.
func TestSQLPausedIsNeverClaimed(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	newJobs(t, l, "a b", 2, 2)
	if ok, err := fleetapi.Pause(ctx, l.Conn, "a"); err != nil || !ok {
		t.Fatalf("pause a: %v %v", ok, err)
	}
	if ok, err := fleetapi.Pause(ctx, l.Conn, "a"); err != nil || ok {
		t.Fatalf("pause a again: %v %v, want false", ok, err)
	}
	if c := claim(t, l.Conn, "w1", 60000); c == nil || c.JobID != "b" {
		t.Fatalf("claim: %+v, want b", c)
	}
	if c := claim(t, l.Conn, "w1", 60000); c != nil {
		t.Fatalf("claimed the paused job: %+v", c)
	}
	// A job paused while leased stays paused when its lease is released.
	if ok, err := fleetapi.Pause(ctx, l.Conn, "b"); err != nil || !ok {
		t.Fatalf("pause b: %v %v", ok, err)
	}
	st := l.status(t)
	if st["a"].State != fleetapi.StatePaused || st["b"].State != fleetapi.StatePaused {
		t.Fatalf("status: %+v", st)
	}
	bReceipt := mustInt(t, l.Conn, "select receipt from job_queue where job_id = 'b'")
	if !release(t, l.Conn, fleetapi.Claim{JobID: "b", Receipt: int64(bReceipt)}, false, 0) {
		t.Fatal("release b")
	}
	if c := claim(t, l.Conn, "w1", 60000); c != nil {
		t.Fatalf("claimed a paused job after its release: %+v", c)
	}
	if ok, err := fleetapi.Resume(ctx, l.Conn, "a"); err != nil || !ok {
		t.Fatalf("resume a: %v %v", ok, err)
	}
	if ok, err := fleetapi.Resume(ctx, l.Conn, "a"); err != nil || ok {
		t.Fatalf("resume a again: %v %v, want false", ok, err)
	}
	if c := claim(t, l.Conn, "w1", 60000); c == nil || c.JobID != "a" {
		t.Fatalf("claim after resume: %+v, want a", c)
	}

	for _, c := range []struct{ sql, code, msg string }{
		{"select pause_job('nope')", "CH409", "job nope: not found"},
		{"select resume_job('nope')", "CH409", "job nope: not found"},
		{"select pause_job('no way')", "22023", `job_id: must be 1 to 64 ASCII letters, digits, _ or -, got "no way"`},
		{"select claim_job('', 1000)", "22023", `worker: must be 1 to 200 characters without control characters, got ""`},
		{"select claim_job(null, 1000)", "22023", "worker: must be 1 to 200 characters without control characters, got null"},
		{"select claim_job('w', 0)", "22023", "lease_ms: must be between 1 and 86400000 (a day), got 0"},
		{"select release_job('a', 0, false, 0)", "22023", "receipt: must be a receipt from claim_job (1 or more), got 0"},
		{"select release_job('a', 1, null, 0)", "22023", "done: must be true or false, got null"},
		{"select release_job('a', 1, false, -1)", "22023", "delay_ms: must be between 0 and 86400000 (a day), got -1"},
	} {
		_, err := l.Conn.Exec(ctx, c.sql)
		wantPgError(t, err, c.code, c.msg)
	}
	_, err := fleetapi.Pause(ctx, l.Conn, "nope")
	if !errors.Is(err, driver.ErrConflict) || err.Error() != "conflict: job nope: not found" {
		t.Fatalf("fleet.Pause of an unknown job: %v", err)
	}
}

// A finished job is never queued again: not by release, re-registration,
// pause or resume. A job finished outside the fleet (chunks drain) leaves
// its row behind until a worker claims it, learns it is done and removes it.
func TestSQLFinishedIsNeverQueuedAgain(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	jobs := newJobs(t, l, "a b", 2, 2)
	c := claim(t, l.Conn, "w1", 60000)
	l.Exec(t, "select run_chunk('a')")
	if !release(t, l.Conn, *c, true, 0) {
		t.Fatal("release a done")
	}
	l.Exec(t, "select run_chunk('b')") // b finished without the fleet: its row stays
	if got := l.queueRow(t, "b"); got == "<null>" {
		t.Fatal("b's row vanished")
	}
	if got := l.status(t)["b"].State; got != fleetapi.StateDone {
		t.Fatalf("status of b: %s", got)
	}
	cb := claim(t, l.Conn, "w1", 60000)
	if cb == nil || cb.JobID != "b" {
		t.Fatalf("claim: %+v", cb)
	}
	if got := mustString(t, l.Conn, "select run_chunk('b')::text"); got != `{"done": true, "processed": [], "next_index": 2}` {
		t.Fatalf("run_chunk b: %s", got)
	}
	if !release(t, l.Conn, *cb, true, 0) {
		t.Fatal("release b done")
	}
	for _, j := range jobs {
		if got := mustString(t, l.Conn, "select register($1::jsonb)::text", j.plan()); got != "false" {
			t.Fatalf("register %s again: %s", j.ID, got)
		}
		for _, op := range []string{"pause", "resume"} {
			_, err := l.Conn.Exec(ctx, fmt.Sprintf("select %s_job($1)", op), j.ID)
			wantPgError(t, err, "CH409", fmt.Sprintf("job %s: already done (next_index 2 of 2); nothing to %s", j.ID, op))
		}
	}
	if n := mustInt(t, l.Conn, "select count(*) from job_queue"); n != 0 {
		t.Fatalf("%d rows queued for finished jobs", n)
	}
	if c := claim(t, l.Conn, "w1", 60000); c != nil {
		t.Fatalf("claimed %+v", c)
	}
}

// job_status: every state, the lease holder, and the drift count of report.
func TestSQLJobStatus(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	if list, err := fleetapi.Status(ctx, l.Conn); err != nil || list == nil || len(list) != 0 {
		t.Fatalf("status of no jobs: %#v %v", list, err)
	}
	jobs := newJobs(t, l, "done leased paused queued idle", 4, 2)
	l.Exec(t, "select run_chunk('done')")
	l.Exec(t, "select run_chunk('done')")
	l.Exec(t, "delete from job_queue where job_id = 'done'")
	c := claim(t, l.Conn, "w1", 60000) // done was first, but it is not queued any more
	if c.JobID != "leased" {
		t.Fatalf("claimed %+v", c)
	}
	if _, err := fleetapi.Pause(ctx, l.Conn, "paused"); err != nil {
		t.Fatal(err)
	}
	l.Exec(t, "delete from job_queue where job_id = 'idle'")
	// Drift: one committed order of done changed since, one deleted.
	l.Exec(t, "update orders set qty = qty + 1, revision = revision + 1 where id = $1", jobs[0].Targets[0].ID)
	l.Exec(t, "delete from orders where id = $1", jobs[0].Targets[3].ID)

	st := l.status(t)
	for id, want := range map[string]string{"done": "done", "leased": "leased", "paused": "paused", "queued": "queued", "idle": "idle"} {
		if st[id].State != want || st[id].N != 4 {
			t.Errorf("%s: %+v, want state %s", id, st[id], want)
		}
	}
	if d := st["done"].Drift; d == nil || *d != 2 || st["done"].NextIndex != 4 {
		t.Errorf("done: drift %v, want 2", st["done"].Drift)
	}
	if s := st["leased"]; s.LeasedBy == nil || *s.LeasedBy != "w1" || s.LeaseUntil == nil || time.Until(*s.LeaseUntil) < 50*time.Second {
		t.Errorf("leased: %+v", s)
	}
	if s := st["queued"]; s.VisibleAt == nil || s.LeasedBy != nil || s.LeaseUntil != nil || s.Drift == nil || *s.Drift != 0 {
		t.Errorf("queued: %+v", s)
	}
	// resume queues an idle job.
	if ok, err := fleetapi.Resume(ctx, l.Conn, "idle"); err != nil || !ok {
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
}

// Upgrading a schema from version 1 (before the queue) queues every
// unfinished job, visible at once, and no finished one.
func TestSQLUpgradeQueuesUnfinishedJobs(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	name := pgtest.NewSchemaName(t)
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "drop schema if exists "+pgx.Identifier{name}.Sanitize()+" cascade"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
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
	if err := m.MigrateTo(ctx, 1); err != nil {
		t.Fatal(err)
	}
	targets := `[{"id": 1, "qty": 1, "revision": 0}, {"id": 2, "qty": 1, "revision": 0}]`
	if _, err := admin.Exec(ctx, `insert into `+name+`.jobs (job_id, tenant, targets, chunk_size, next_index)
		values ('fresh', 't', $1, 1, 0), ('half', 't', $1, 1, 1), ('finished', 't', $1, 1, 2)`, targets); err != nil {
		t.Fatal(err)
	}
	if err := driver.Migrate(ctx, admin, name); err != nil {
		t.Fatal(err)
	}
	got := mustString(t, admin, `select jsonb_agg(jsonb_build_array(job_id, visible_at <= now(), leased_by, paused) order by job_id)::text
		from `+name+`.job_queue`)
	if got != `[["fresh", true, null, false], ["half", true, null, false]]` {
		t.Fatalf("queue after the upgrade: %s", got)
	}
	// Migrating again is a no-op: nothing queued twice, nothing re-queued.
	l := &lab{&pgtest.Schema{Name: name, DSN: pgtest.WithSearchPath(pgtest.DSN(), name)}}
	l.Conn = pgtest.Connect(t, l.DSN)
	if c := claim(t, l.Conn, "w1", 60000); c == nil || c.JobID != "fresh" {
		t.Fatalf("claim after the upgrade: %+v", c)
	}
	before := mustString(t, admin, "select jsonb_agg(q order by job_id)::text from "+name+".job_queue q")
	if err := driver.Migrate(ctx, admin, name); err != nil {
		t.Fatal(err)
	}
	if after := mustString(t, admin, "select jsonb_agg(q order by job_id)::text from "+name+".job_queue q"); after != before {
		t.Fatalf("migrate again changed the queue:\n%s\n%s", before, after)
	}
}
