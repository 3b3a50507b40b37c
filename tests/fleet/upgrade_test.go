package fleet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// An install from before least privilege (schema version 7: invoker
// functions executable by PUBLIC, no job_approval, roles that worked
// through table privileges) upgraded by chunks migrate: it says what it
// changed, every existing job gets its approval, the functions become
// SECURITY DEFINER and leave PUBLIC, the role that could write keeps
// working (a worker running as it drains the jobs, started mid-job, with
// migrate run again twice while it runs) and the role that could only read
// still reads and cannot run a chunk.
func TestUpgradeToLeastPrivilege(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := newSeeder(l, 17)
	var jobs []job
	for _, id := range []string{"old-1", "old-2", "old-3"} {
		j := s.job(t, id, 12, 2)
		l.register(t, j)
		jobs = append(jobs, j)
	}
	l.Exec(t, "select run_chunk('old-1')")
	writer, reader := pgtest.NewRole(t, pgtest.DSN(), "writer"), pgtest.NewRole(t, pgtest.DSN(), "reader")
	id := func(r pgtest.Role) string { return pgx.Identifier{r.Name}.Sanitize() }
	schema := pgx.Identifier{l.Name}.Sanitize()
	for _, sql := range []string{
		// Version 7 as it was: no approvals, invoker functions, PUBLIC.
		"drop table job_approval",
		`do $$ declare f regprocedure; begin
		   for f in select p.oid::regprocedure from pg_proc as p where p.pronamespace = current_schema()::regnamespace loop
		     execute format('alter function %s security invoker', f);
		   end loop; end $$`,
		"grant execute on all functions in schema " + schema + " to public",
		"update schema_version set version = 7",
		// What a DBA granted then: a role that runs chunks, one that reads.
		"grant usage on schema " + schema + " to " + id(writer) + ", " + id(reader),
		"grant select, insert, update, delete on all tables in schema " + schema + " to " + id(writer),
		"grant select on all tables in schema " + schema + " to " + id(reader),
	} {
		l.Exec(t, sql)
	}

	admin := append([]string{"--dsn", pgtest.DSN(), "--schema", l.Name}, "migrate")
	r := clitest.Run(t, admin...)
	if r.Code != 0 {
		t.Fatalf("migrate: %v", r)
	}
	for _, line := range []string{
		"chunks migrate: NOTICE: recorded the approval of 3 jobs registered before approvals were kept, from their rows as they are now",
		"chunks migrate: NOTICE: role " + writer.Name + " could write the tables of chunks; the functions are now SECURITY DEFINER and no longer executable by PUBLIC, so it was granted EXECUTE on every function chunks has",
		"chunks migrate: NOTICE: role " + reader.Name + " could read the tables of chunks; the functions are now SECURITY DEFINER and no longer executable by PUBLIC, so it was granted EXECUTE on the functions that read",
		"chunks migrate: WARNING: schema " + l.Name + " and its SECURITY DEFINER functions belong to ",
	} {
		if !strings.Contains(r.Stderr, line) {
			t.Errorf("migrate did not say %q:\n%s", line, r.Stderr)
		}
	}
	if got := pgtest.MustString(t, l.Conn, `select jsonb_agg(jsonb_build_array(job_id, recorded_from) order by job_id)::text from job_approval`); got != `[["old-1", "migration"], ["old-2", "migration"], ["old-3", "migration"]]` {
		t.Fatalf("approvals after the upgrade: %s", got)
	}
	if got := pgtest.MustInt(t, l.Conn, `select count(*) from pg_proc as p where p.pronamespace = current_schema()::regnamespace
	    and p.proowner <> to_regrole((select w.role from change_writer as w)) -- the writer's run as it (docs/roles.md)
	    and (p.prosecdef <> (p.oid in (select access_functions('all')))
	         or exists (select from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) as a where a.grantee = 0))`); got != 0 {
		t.Fatalf("%d functions are not as the new model has them (definer iff callable, none for PUBLIC)", got)
	}

	// The reader reads and runs nothing.
	rd := pgtest.Connect(t, pgtest.WithSearchPath(reader.DSN(pgtest.DSN()), l.Name))
	if got := pgtest.MustString(t, rd, "select report('old-1') ->> 'committed'"); got != fmt.Sprintf("[%d, %d]", jobs[0].Targets[0].ID, jobs[0].Targets[1].ID) {
		t.Fatalf("the reader's report: %s", got)
	}
	if _, err := rd.Exec(ctx, "select run_chunk('old-2')"); err == nil || !strings.Contains(err.Error(), "permission denied for function run_chunk") {
		t.Fatalf("the reader ran a chunk: %v", err)
	}

	// The writer's fleet goes on; migrate runs again while it does.
	l.slowOrders(t, 0.05)
	workerArgs := []string{"--dsn", writer.DSN(pgtest.DSN()) + " application_name=" + l.Name, "--schema", l.Name, "worker", "--id", "w1", "--verbose"}
	w := clitest.Start(t, clitest.Options{Name: "w1"}, workerArgs...)
	w.WaitLine(t, 0, 20*time.Second, "msg=ready")
	for range 2 {
		if r := clitest.Run(t, admin...); r.Code != 0 || strings.Contains(r.Stderr, "NOTICE") {
			t.Fatalf("migrate again, under the running worker: %v", r)
		}
	}
	pgtest.WaitFor(t, 60*time.Second, "the writer's worker drains the old jobs", func() bool { return l.allDone(t) })
	stopWorkers(t, w)
	l.wantFinished(t, jobs)
}
