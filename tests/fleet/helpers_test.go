package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	fleetapi "github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

var ctx = context.Background()

// lab is a test's own migrated schema. The test itself (Conn) is the
// superuser, standing for the application and the DBA; every chunks
// process it starts (Globals) runs as operator, a role that chunks grant
// --operator made an operator and that holds no table privilege (docs/roles.md).
type lab struct {
	*clitest.Lab
	base     string // the server's DSN without search_path; "" for the test database
	operator pgtest.Role
}

func newLab(t testing.TB) *lab {
	t.Helper()
	l := &lab{Lab: &clitest.Lab{Schema: pgtest.NewSchema(t)}}
	l.operator = newOperator(t, l.Conn, pgtest.DSN())
	l.ChunksDSN = l.chunksDSN(l.Name)
	return l
}

// labOn is a lab on another server: a new schema migrated there through
// base (a DSN without search_path), dropped with the server.
func labOn(t testing.TB, base string) *lab {
	t.Helper()
	admin := pgtest.Connect(t, base)
	name := pgtest.NewSchemaName(t)
	if err := driver.Migrate(ctx, admin, name, driver.MigrateOptions{}); err != nil {
		t.Fatalf("migrate %s: %v", name, err)
	}
	dsn := pgtest.WithSearchPath(base, name)
	l := &lab{Lab: &clitest.Lab{Schema: &pgtest.Schema{Name: name, DSN: dsn, Conn: pgtest.Connect(t, dsn)}}, base: base}
	l.operator = newOperator(t, l.Conn, base)
	l.ChunksDSN = l.chunksDSN(l.Name)
	// --max-replica-lag reads pg_stat_replication in full (docs/production.md
	// "Protecting production"): pg_monitor.
	if _, err := admin.Exec(ctx, "grant pg_monitor to "+pgx.Identifier{l.operator.Name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return l
}

// newOperator is a new role on the server of base, made an operator of the
// schema of conn's search_path, and then refused even the SELECT on the
// tables of chunks that an operator gets for reading them by hand: chunks
// itself reads and writes through its functions only, so its processes run
// with no table privilege at all.
func newOperator(t testing.TB, conn *pgx.Conn, base string) pgtest.Role {
	t.Helper()
	op := pgtest.NewRole(t, base, "operator")
	g, err := driver.Grant(ctx, conn, op.Name, driver.Operator)
	if err != nil {
		t.Fatalf("grant operator: %v", err)
	}
	for _, table := range g.Tables {
		if _, err := conn.Exec(ctx, "revoke select on table "+table+" from "+pgx.Identifier{op.Name}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
	if n := pgtest.MustInt(t, conn, `select count(*) from pg_class as c where c.relnamespace = current_schema()::regnamespace
	    and c.relkind = 'r' and has_table_privilege($1, c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')`, op.Name); n != 0 {
		t.Fatalf("the operator holds privileges on %d tables", n)
	}
	return op
}

// chunksDSN is the DSN of the lab's chunks processes (its Globals): they
// log in as operator, and their connections carry app as application_name
// (the lab's name for Globals), so pg_stat_activity tells them from those
// of tests running in parallel.
func (l *lab) chunksDSN(app string) string {
	dsn := l.base
	if dsn == "" {
		dsn = pgtest.DSN()
	}
	return withParam(l.operator.DSN(dsn), "application_name", app)
}

// globalsAs is Globals with another application_name.
func (l *lab) globalsAs(app string) []string {
	return []string{"--dsn", l.chunksDSN(app), "--schema", l.Name}
}

// withParam is dsn (key=value or a URL) with one more parameter.
func withParam(dsn, key, value string) string {
	switch {
	case !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://"):
		return dsn + " " + key + "=" + value
	case strings.Contains(dsn, "?"):
		return dsn + "&" + key + "=" + value
	default:
		return dsn + "?" + key + "=" + value
	}
}

// simpleProtocol is globals with default_query_exec_mode=simple_protocol,
// as pgx is often set up behind PgBouncer: every query is one text, so
// "select 1; commit; delete ..." would run as three statements.
func (l *lab) simpleProtocol() []string {
	g := l.Globals()
	g[1] = withParam(g[1], "default_query_exec_mode", "simple_protocol")
	return g
}

// worker starts "chunks worker --id name --verbose args..." on the lab and
// waits for its ready line.
func (l *lab) worker(t testing.TB, name string, args ...string) *clitest.Proc {
	t.Helper()
	p := l.startWorker(t, name, args...)
	p.WaitLine(t, 0, 20*time.Second, "msg=ready", "worker="+name)
	return p
}

func (l *lab) startWorker(t testing.TB, name string, args ...string) *clitest.Proc {
	t.Helper()
	return l.startWorkerAs(t, l.Name, name, args...)
}

// startWorkerAs starts a worker whose connections carry application_name app.
func (l *lab) startWorkerAs(t testing.TB, app, name string, args ...string) *clitest.Proc {
	t.Helper()
	all := append(l.globalsAs(app), append([]string{"worker", "--id", name, "--verbose"}, args...)...)
	return clitest.Start(t, clitest.Options{Name: name}, all...)
}

// stopWorkers sends SIGTERM to each worker and wants exit 0 from each.
func stopWorkers(t testing.TB, workers ...*clitest.Proc) {
	t.Helper()
	for _, w := range workers {
		w.Signal(t, syscall.SIGTERM)
	}
	for _, w := range workers {
		if r := w.WaitWithin(t, 20*time.Second); r.Code != 0 || r.Signal != 0 {
			t.Fatalf("want %s to exit 0 after SIGTERM, got %v", w.Name, r)
		}
	}
}

// job is a registered job and the orders it was seeded with.
type job struct {
	ID        string
	Tenant    string
	ChunkSize int
	Targets   []driver.Target // in id order
}

func (j job) plan() string {
	b, err := json.Marshal(driver.Plan{JobID: j.ID, Tenant: j.Tenant, Targets: j.Targets, ChunkSize: j.ChunkSize, AllowPartial: true})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (j job) chunks() int { return (len(j.Targets) + j.ChunkSize - 1) / j.ChunkSize }

// seeder hands out order ids and inserts orders.
type seeder struct {
	l      *lab
	nextID int64
	rng    *rand.Rand
}

func newSeeder(l *lab, seed uint64) *seeder {
	return &seeder{l: l, nextID: 1000, rng: rand.New(rand.NewPCG(seed, 7))}
}

// job inserts n pending orders for a new job (and one order of the same
// tenant that is no target, to prove it is never touched) and returns the
// job; register it with register.
func (s *seeder) job(t testing.TB, id string, n, chunkSize int) job {
	t.Helper()
	j := job{ID: id, Tenant: fmt.Sprintf("tenant-%d", s.rng.IntN(3)), ChunkSize: chunkSize}
	for range n {
		j.Targets = append(j.Targets, driver.Target{ID: s.nextID, Revision: int64(s.rng.IntN(5)), Qty: int64(1 + s.rng.IntN(20))})
		s.nextID += 1 + int64(s.rng.IntN(2)) // gaps: some ids are no target
	}
	rows, err := json.Marshal(j.Targets)
	if err != nil {
		t.Fatal(err)
	}
	s.l.Exec(t, `insert into orders (id, tenant, qty, state, revision)
		select id, $2, qty, 'pending', revision from jsonb_to_recordset($1::jsonb) as x(id integer, revision integer, qty integer)
		union all select $3, $2, 1, 'pending', 0`, string(rows), j.Tenant, s.nextID)
	s.nextID++
	return j
}

// conflictScene registers, for each of ids, a job of 7 targets in chunks of
// 2, and the job "changed" (6 targets) whose third order changed after the
// approval: its second chunk conflicts.
func (l *lab) conflictScene(t testing.TB, seed uint64, ids ...string) (good []job, bad job) {
	t.Helper()
	s := newSeeder(l, seed)
	for _, id := range ids {
		j := s.job(t, id, 7, 2)
		l.register(t, j)
		good = append(good, j)
	}
	bad = s.job(t, "changed", 6, 2)
	l.register(t, bad)
	l.Exec(t, "update orders set qty = qty + 1, revision = revision + 1 where id = $1", bad.Targets[2].ID)
	return good, bad
}

// wantFinishedBut is wantFinished for good, once bad's job, audit and
// orders are gone.
func (l *lab) wantFinishedBut(t testing.TB, good []job, bad job) {
	t.Helper()
	l.Exec(t, "delete from job_audit where job_id = $1", bad.ID)
	l.Exec(t, "delete from jobs where job_id = $1", bad.ID) // the queue row goes with it (on delete cascade)
	var ids []int64
	for _, target := range bad.Targets {
		ids = append(ids, target.ID)
	}
	l.Exec(t, "delete from orders where id = any($1)", ids)
	l.wantFinished(t, good)
}

// register registers j with the SQL function (a NOTIFY goes with it).
func (l *lab) register(t testing.TB, j job) {
	t.Helper()
	if got := pgtest.MustString(t, l.Conn, "select register($1::jsonb)::text", j.plan()); got != "true" {
		t.Fatalf("register %s: %s", j.ID, got)
	}
}

// slowOrders makes every UPDATE statement on orders take seconds longer, so
// that chunks are in flight long enough to be caught there.
func (l *lab) slowOrders(t testing.TB, seconds float64) {
	t.Helper()
	l.slowOrdersFor(t, seconds, "", 0)
}

// slowOrdersFor is slowOrders, with another delay for the sessions whose
// application_name is app.
func (l *lab) slowOrdersFor(t testing.TB, seconds float64, app string, appSeconds float64) {
	t.Helper()
	l.Exec(t, `create or replace function slow_orders() returns trigger language plpgsql as $$
		begin
		  perform pg_sleep(case when current_setting('application_name') = tg_argv[1] then tg_argv[2] else tg_argv[0] end::float8);
		  return null;
		end $$`)
	l.Exec(t, "drop trigger if exists orders_slow on orders")
	l.Exec(t, fmt.Sprintf("create trigger orders_slow after update on orders for each statement execute function slow_orders('%g', '%s', '%g')",
		seconds, app, appSeconds))
}

// nextIndex is the job's committed progress.
func (l *lab) nextIndex(t testing.TB, jobID string) int {
	t.Helper()
	return pgtest.MustInt(t, l.Conn, "select next_index from jobs where job_id = $1", jobID)
}

// status is fleet.Status on the lab.
func (l *lab) status(t testing.TB) map[string]fleetapi.JobStatus {
	t.Helper()
	list, err := fleetapi.Status(ctx, l.Conn)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]fleetapi.JobStatus{}
	for _, s := range list {
		out[s.JobID] = s
	}
	return out
}

// allDone says whether every job of the lab is finished.
func (l *lab) allDone(t testing.TB) bool {
	t.Helper()
	return pgtest.MustInt(t, l.Conn, "select count(*) from job_shapes where next_index < targets") == 0
}

// chunkInFlight says whether a session of the lab's processes is inside
// run_chunk, sleeping in the slow trigger: a chunk has started and has not
// committed.
func (l *lab) chunkInFlight(t testing.TB) bool {
	t.Helper()
	return l.chunkInFlightAs(t, l.Name)
}

func (l *lab) chunkInFlightAs(t testing.TB, app string) bool {
	t.Helper()
	return pgtest.MustInt(t, l.Conn, `select count(*) from pg_stat_activity
		where application_name = $1 and query like '%run_%chunk%' and wait_event = 'PgSleep'`, app) > 0
}

// wantFinished fails unless every job finished exactly as approved: each
// approved order was changed exactly once (cancelled, revision + 1), every
// other order is untouched, every audit equals its targets, the queue is
// empty and status says done with no drift.
func (l *lab) wantFinished(t testing.TB, jobs []job) {
	t.Helper()
	progress := l.wantConsistent(t, jobs)
	for _, j := range jobs {
		if got := progress[j.ID]; got != len(j.Targets) {
			t.Errorf("job %s: next_index %d, want %d", j.ID, got, len(j.Targets))
		}
	}
	if n := pgtest.MustInt(t, l.Conn, "select count(*) from job_queue"); n != 0 {
		t.Errorf("the queue still has %d rows: %s", n, pgtest.MustString(t, l.Conn, "select jsonb_agg(q)::text from job_queue q"))
	}
	for id, s := range l.status(t) {
		if s.State != fleetapi.StateDone || s.Drift == nil || *s.Drift != 0 {
			t.Errorf("status of %s: %+v, want done with drift 0", id, s)
		}
	}
}

// wantConsistent fails unless the orders and audits are exactly what the
// jobs' committed progress says, whatever it is: for a job at next_index k,
// its audit is its first k targets, those k orders were changed exactly once
// (cancelled, revision + 1), and its other targets and every order that is no
// target are untouched. It returns each job's next_index.
func (l *lab) wantConsistent(t testing.TB, jobs []job) map[string]int {
	t.Helper()
	progress := map[string]int{}
	changedOnce := map[int64]driver.Target{} // the targets that the committed chunks cancelled
	pending := map[int64]driver.Target{}     // the targets of chunks not committed yet
	for _, j := range jobs {
		k := l.nextIndex(t, j.ID)
		progress[j.ID] = k
		type auditRow struct {
			Ordinal                           int
			ID, PreviousRevision, NewRevision int64
			Qty                               int64
		}
		rows, _ := l.Conn.Query(ctx, `select ordinal, id, previous_revision, new_revision, qty
			from job_audit where job_id = $1 order by ordinal`, j.ID)
		audit, err := pgx.CollectRows(rows, pgx.RowToStructByPos[auditRow])
		if err != nil {
			t.Fatal(err)
		}
		want := []auditRow{}
		for i, target := range j.Targets {
			if i < k {
				want = append(want, auditRow{i, target.ID, target.Revision, target.Revision + 1, target.Qty})
				changedOnce[target.ID] = target
			} else {
				pending[target.ID] = target
			}
		}
		if len(audit) == 0 {
			audit = []auditRow{}
		}
		if !reflect.DeepEqual(audit, want) {
			t.Errorf("job %s at next_index %d: audit\n got %+v\nwant %+v", j.ID, k, audit, want)
		}
	}
	type order struct {
		ID       int64
		State    string
		Revision int64
		Qty      int64
	}
	rows, _ := l.Conn.Query(ctx, "select id, state, revision, qty from orders order by id")
	orders, err := pgx.CollectRows(rows, pgx.RowToStructByPos[order])
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for _, o := range orders {
		target, done := changedOnce[o.ID]
		waiting, notYet := pending[o.ID]
		switch {
		case done && (o.State != "cancelled" || o.Revision != target.Revision+1 || o.Qty != target.Qty):
			t.Errorf("order %d: %+v, want cancelled once (revision %d)", o.ID, o, target.Revision+1)
		case notYet && (o.State != "pending" || o.Revision != waiting.Revision || o.Qty != waiting.Qty):
			t.Errorf("order %d: %+v, want it untouched (pending, revision %d): its chunk has not committed", o.ID, o, waiting.Revision)
		case !done && !notYet && (o.State != "pending" || o.Revision != 0):
			t.Errorf("order %d is no target but changed: %+v", o.ID, o)
		case done:
			changed++
		}
	}
	if changed != len(changedOnce) {
		t.Errorf("%d orders changed by committed chunks, want %d", changed, len(changedOnce))
	}
	return progress
}

// explainOnFailure logs, if the test fails, every job's progress and queue
// row and all that each worker printed: what a timeout alone does not say.
// Register it after the workers start, so that it runs before they are killed.
func explainOnFailure(t testing.TB, conn *pgx.Conn, workers ...*clitest.Proc) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		state, err := pgtest.TryString(conn, `select string_agg(format('%s next_index %s of %s, queue %s', j.job_id, j.next_index,
		    (select s.targets from job_shapes as s where s.job_id = j.job_id), coalesce(to_jsonb(q)::text, 'none')), e'\n' order by j.job_id)
		  from jobs as j left join job_queue as q using (job_id)`)
		if err != nil {
			state = "(could not read the jobs: " + err.Error() + ")"
		}
		t.Logf("jobs at the failure:\n%s", state)
		for _, w := range workers {
			t.Logf("%s printed:\n%s", w.Name, strings.Join(w.Lines(), "\n"))
		}
	})
}
