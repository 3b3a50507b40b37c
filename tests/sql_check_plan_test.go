package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// everything is state plus the tables of chunks' own (the queue and the
// kinds), to prove that a read wrote nothing anywhere.
func everything(t testing.TB, s *pgtest.Schema) string {
	t.Helper()
	return state(t, s) + queryString(t, s, `select jsonb_build_object(
	  'queue', (select coalesce(jsonb_agg(q order by q.job_id), '[]') from job_queue q),
	  'kinds', (select coalesce(jsonb_agg(k order by k.job_id), '[]') from job_kind k))::text`)
}

// unchangedAll fails unless everything of the schema is still before.
func unchangedAll(t testing.TB, s *pgtest.Schema, what, before string) {
	t.Helper()
	if after := everything(t, s); after != before {
		t.Fatalf("%s changed the data:\nbefore %s\n after %s", what, before, after)
	}
}

// checkPlan is check_plan(plan) decoded.
func checkPlan(t testing.TB, s *pgtest.Schema, plan string) driver.PlanCheck {
	t.Helper()
	var c driver.PlanCheck
	if err := json.Unmarshal([]byte(pgtest.MustString(t, s.Conn, "select check_plan($1)::text", plan)), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// problemsOf maps each target's id to its problem ("" when ok).
func problemsOf(c driver.PlanCheck) map[int64]string {
	out := map[int64]string{}
	for _, target := range c.Targets {
		if target.OK != (target.Problem == "") {
			panic(fmt.Sprintf("target %d: ok %t with problem %q", target.ID, target.OK, target.Problem))
		}
		out[target.ID] = target.Problem
	}
	return out
}

// The preflight reports exactly the targets that register followed by
// drain would conflict on, in the words of their conflicts, and writes
// and locks nothing.
func TestSQLCheckPlanMatchesRegisterAndDrain(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	seedOrders(t, s, "acme", 1, 10)
	s.Exec(t, "delete from orders where id = 2")
	s.Exec(t, "update orders set tenant = 'globex' where id = 3")
	s.Exec(t, "update orders set state = 'paid', revision = 4 where id = 4")
	s.Exec(t, "update orders set revision = 5 where id = 6")
	s.Exec(t, "update orders set qty = 7, revision = 4 where id = 8")
	s.Exec(t, "update orders set state = 'cancelled', revision = 3 where id = 9")
	p := plan("p", "acme", 1, 10, 2)

	// Nothing is written (no transaction id is even assigned) and no row
	// is locked: with every order and a job row locked by another
	// session, and a lock wait of 10 ms allowed, it answers.
	registerJob(t, s, "other", "acme", 11, 1, 1)
	locker := pgtest.Connect(t, s.DSN)
	lock, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := lock.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			t.Error(err)
		}
	}()
	if _, err := lock.Exec(ctx, "select from orders for update; select from jobs for update"); err != nil {
		t.Fatal(err)
	}
	before := everything(t, s)
	tx, err := s.Conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "set local lock_timeout = '10ms'"); err != nil {
		t.Fatal(err)
	}
	var got, xid string
	if err := tx.QueryRow(ctx, "select check_plan($1)::text, coalesce(pg_current_xact_id_if_assigned()::text, 'none')", p).
		Scan(&got, &xid); err != nil {
		t.Fatalf("check_plan with every order locked elsewhere: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if xid != "none" {
		t.Fatalf("check_plan assigned transaction id %s: it wrote something", xid)
	}
	unchangedAll(t, s, "check_plan", before)
	sameJSON(t, "check_plan", got, `{"job_id": "p", "ok": false, "job": "free", "job_problem": "", "targets": [
	  {"id": 1, "ok": true, "problem": "", "committed": false},
	  {"id": 2, "ok": false, "problem": "order 2: missing", "committed": false},
	  {"id": 3, "ok": false, "problem": "order 3: belongs to another tenant", "committed": false},
	  {"id": 4, "ok": false, "problem": "order 4: state is paid", "committed": false},
	  {"id": 5, "ok": true, "problem": "", "committed": false},
	  {"id": 6, "ok": false, "problem": "order 6: revision is 5, approved 3", "committed": false},
	  {"id": 7, "ok": true, "problem": "", "committed": false},
	  {"id": 8, "ok": false, "problem": "order 8: revision is 4, approved 3", "committed": false},
	  {"id": 9, "ok": false, "problem": "order 9: state is cancelled", "committed": false},
	  {"id": 10, "ok": true, "problem": "", "committed": false}]}`)
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// Each target through the real path: a job of that target alone,
	// registered and run in a transaction that is rolled back. Its chunk
	// conflicts exactly when the preflight said so, with its words.
	problems := problemsOf(checkPlan(t, s, p))
	for id, want := range problems {
		tx, err := s.Conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "select register($1)",
			fmt.Sprintf(`{"job_id": "probe", "tenant": "acme", "chunk_size": 1, "allow_partial": true, "targets": [{"id": %d, "revision": 3, "qty": 2}]}`, id)); err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(ctx, "select run_chunk('probe')")
		if rerr := tx.Rollback(ctx); rerr != nil {
			t.Fatal(rerr)
		}
		switch {
		case want == "" && err != nil:
			t.Errorf("order %d: the preflight said ok, the chunk failed: %v", id, err)
		case want != "":
			pgtest.WantPgError(t, err, "CH409", want)
		}
	}
	unchangedAll(t, s, "the probes", before)

	// register + drain: the drain stops at the first target the preflight
	// named, with the same words; the chunks before it committed.
	s.Exec(t, "select register($1)", p)
	var drainErr error
	for range 5 {
		if _, drainErr = s.Conn.Exec(ctx, "select run_chunk('p')"); drainErr != nil {
			break
		}
	}
	pgtest.WantPgError(t, drainErr, "CH409", "order 2: missing")
	if got := queryString(t, s, "select next_index::text from jobs where job_id = 'p'"); got != "0" {
		t.Fatalf("next_index %s after the conflict in the first chunk", got)
	}

	// Fixed orders: the preflight of the registered job says so and names
	// the job as registered; the remaining problems are the same.
	s.Exec(t, "insert into orders values (2, 'acme', 2, 'pending', 3)")
	s.Exec(t, "update orders set tenant = 'acme' where id = 3")
	s.Exec(t, "update orders set state = 'pending', revision = 3 where id = 4")
	s.Exec(t, "select run_chunk('p')")
	s.Exec(t, "select run_chunk('p')")
	c := checkPlan(t, s, p)
	if c.Job != driver.JobRegistered || c.JobProblem != "" || c.OK {
		t.Fatalf("check of the registered, half-run job: %+v", c)
	}
	for _, target := range c.Targets {
		wantCommitted := target.ID <= 4
		if target.Committed != wantCommitted || wantCommitted && !target.OK {
			t.Errorf("target %+v: committed should be %t, and ok when committed", target, wantCommitted)
		}
	}
	if got := c.Problems(); !reflect.DeepEqual(got, []driver.TargetCheck{
		{ID: 6, Problem: "order 6: revision is 5, approved 3"},
		{ID: 8, Problem: "order 8: revision is 4, approved 3"},
		{ID: 9, Problem: "order 9: state is cancelled"},
	}) {
		t.Fatalf("problems of the half-run job: %+v", got)
	}
	// A committed order that changed since is still no problem: drain
	// never changes it again.
	s.Exec(t, "update orders set qty = 9, revision = revision + 1 where id = 1")
	if got := problemsOf(checkPlan(t, s, p))[1]; got != "" {
		t.Fatalf("a committed, drifted target: %q", got)
	}
	s.Exec(t, "update orders set revision = 3 where id = 6")
	s.Exec(t, "update orders set qty = 2, revision = 3 where id = 8")
	s.Exec(t, "update orders set state = 'pending' where id = 9")
	if c := checkPlan(t, s, p); !c.OK || len(c.Problems()) != 0 {
		t.Fatalf("every remaining order fixed: %+v", c)
	}
	before = everything(t, s)
	for range 3 {
		s.Exec(t, "select run_chunk('p')")
	}
	if got := queryString(t, s, "select next_index::text from jobs where job_id = 'p'"); got != "10" {
		t.Fatalf("the job did not finish after an ok preflight: next_index %s", got)
	}
	if before == everything(t, s) {
		t.Fatal("the drain changed nothing")
	}
}

// The job id's state: free, registered with the same approval, or taken by
// another approval (register's conflict, in its words), an undo included.
func TestSQLCheckPlanJobState(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 4, 2)
	for _, c := range []struct {
		name, plan, job, problem string
	}{
		{"free", plan("free", "acme", 1, 4, 2), driver.JobFree, ""},
		{"same approval", plan("j", "acme", 1, 4, 2), driver.JobRegistered, ""},
		{"chunk size", plan("j", "acme", 1, 4, 3), driver.JobConflict, "job j: already registered with chunk_size 2, not 3"},
		{"tenant", plan("j", "globex", 1, 4, 2), driver.JobConflict, `job j: already registered for tenant "acme", not "globex"`},
		{"targets", plan("j", "acme", 1, 3, 2), driver.JobConflict, "job j: already registered with different targets"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := everything(t, s)
			got := checkPlan(t, s, c.plan)
			if got.Job != c.job || got.JobProblem != c.problem || got.OK != (c.job != driver.JobConflict) {
				t.Fatalf("check: %+v, want job %s %q", got, c.job, c.problem)
			}
			unchangedAll(t, s, "check_plan", before)
			if c.problem != "" {
				refuse(t, s, "CH409", c.problem, "select register($1)::text", c.plan)
			}
		})
	}

	// The id of an undo is taken, whatever the plan.
	s.Exec(t, "select run_chunk('j')")
	s.Exec(t, "select run_chunk('j')")
	s.Exec(t, "select register_undo('j')")
	undo := pgtest.MustString(t, s.Conn, "select inspect_job('j-undo')::text")
	var job driver.Job
	if err := json.Unmarshal([]byte(undo), &job); err != nil {
		t.Fatal(err)
	}
	same, err := json.Marshal(driver.Plan{JobID: job.JobID, Tenant: job.Tenant, Targets: job.Targets, ChunkSize: job.ChunkSize, AllowPartial: true})
	if err != nil {
		t.Fatal(err)
	}
	got := checkPlan(t, s, string(same))
	if got.Job != driver.JobConflict || got.JobProblem != "job j-undo: already registered as the undo of j" || got.OK {
		t.Fatalf("check of an undo's id with its very targets: %+v", got)
	}
	refuse(t, s, "CH409", "job j-undo: already registered as the undo of j", "select register($1)::text", string(same))
}

// Bad input is refused as register refuses it, naming the field; nothing
// is read or written. From Go, the plan is checked before the server.
func TestCheckPlanInvalid(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	for _, c := range []struct{ plan, msg string }{
		{planWith(map[string]string{"chunk_size": "0"}), "chunk_size: must be between 1 and 10, got 0"},
		{planWith(map[string]string{"extra": "1"}), `plan: unexpected key "extra"`},
		{planWith(map[string]string{"targets": list(entry("1", "3", "2.5"))}), "targets[0].qty: must be an integer, got 2.5"},
		{planWith(map[string]string{"allow_partial": "false"}), "allow_partial: must be true (each chunk commits on its own), got false"},
		{`[]`, "plan: must be an object with the keys job_id, tenant, targets, chunk_size, allow_partial, got array"},
	} {
		refuse(t, s, "22023", c.msg, "select check_plan($1)::text", c.plan)
	}
	_, err := driver.CheckPlan(ctx, s.Conn, driver.Plan{JobID: "j", Tenant: "acme", ChunkSize: 1, AllowPartial: true})
	var dErr *driver.Error
	if !errors.Is(err, driver.ErrInvalid) || !errors.As(err, &dErr) || dErr.Err != nil ||
		err.Error() != "invalid: items: must be a list of 1 to 64 targets, got 0" {
		t.Fatalf("CheckPlan of a plan without targets: %v", err)
	}
	c, err := driver.CheckPlan(ctx, s.Conn, goPlan("j", "acme", 1, 2, 1))
	if err != nil || c.OK || c.Job != driver.JobFree || len(c.Problems()) != 2 || c.Targets[1].Problem != "order 2: missing" {
		t.Fatalf("CheckPlan with no orders: %+v %v", c, err)
	}
	out, err := json.Marshal(driver.PlanCheck{})
	if err != nil || string(out) != `{"job_id":"","ok":false,"job":"","job_problem":"","targets":[]}` {
		t.Fatalf("zero PlanCheck: %s %v", out, err)
	}
}
