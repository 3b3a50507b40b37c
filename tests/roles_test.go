package tests

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// roles is a schema installed the way docs/roles.md recommends:
// owned by a role that is not a superuser (chunks migrate --owner), with an
// operator and a viewer granted by that owner. The test's superuser stands
// for the application: it writes orders.
type roles struct {
	*pgtest.Schema          // the application's view: the superuser, search_path = the schema
	owner, operator, viewer pgtest.Role
}

// DSN of role r on the schema.
func (r *roles) dsn(role pgtest.Role) string {
	return pgtest.WithSearchPath(role.DSN(pgtest.DSN()), r.Name)
}

// connect opens a connection as role r on the schema.
func (r *roles) connect(t testing.TB, role pgtest.Role) *pgx.Conn {
	t.Helper()
	return pgtest.Connect(t, r.dsn(role))
}

func newRoles(t testing.TB) *roles {
	t.Helper()
	admin := pgtest.Connect(t, pgtest.DSN())
	name := pgtest.NewSchemaName(t)
	t.Cleanup(func() { // after the roles are gone (cleanups run last first)
		if _, err := admin.Exec(ctx, "drop schema if exists "+name+" cascade"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	r := &roles{owner: pgtest.NewRole(t, pgtest.DSN(), "owner")}
	if err := driver.Migrate(ctx, admin, name, driver.MigrateOptions{Owner: r.owner.Name}); err != nil {
		t.Fatalf("migrate %s --owner %s: %v", name, r.owner.Name, err)
	}
	dsn := pgtest.WithSearchPath(pgtest.DSN(), name)
	r.Schema = &pgtest.Schema{Name: name, DSN: dsn, Conn: pgtest.Connect(t, dsn)}
	r.operator, r.viewer = pgtest.NewRole(t, pgtest.DSN(), "operator"), pgtest.NewRole(t, pgtest.DSN(), "viewer")
	owner := r.connect(t, r.owner) // the owner grants, as docs/roles.md has it
	if _, err := driver.Grant(ctx, owner, r.operator.Name, driver.Operator); err != nil {
		t.Fatalf("grant operator: %v", err)
	}
	if _, err := driver.Grant(ctx, owner, r.viewer.Name, driver.Viewer); err != nil {
		t.Fatalf("grant viewer: %v", err)
	}
	return r
}

// chunksTables are the tables of chunks, orders aside.
var chunksTables = []string{"jobs", "job_audit", "job_approval", "job_kind", "job_queue", "job_progress", "workers", "campaigns", "campaign_jobs",
	"changes", "job_change", "change_audit"}

// wantNoTableWrites fails unless conn is refused (42501) every INSERT,
// UPDATE, DELETE and TRUNCATE on every table of the schema, orders included.
func wantNoTableWrites(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	for _, table := range append(slices.Clone(chunksTables), "orders", "schema_version") {
		var column string
		if err := conn.QueryRow(ctx, `select attname::text from pg_attribute
		  where attrelid = to_regclass($1) and attnum = 1`, table).Scan(&column); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		for _, sql := range []string{
			"insert into " + table + " default values",
			"update " + table + " set " + column + " = " + column,
			"delete from " + table,
			"truncate " + table,
		} {
			_, err := conn.Exec(ctx, sql)
			pgtest.WantPgErrorContaining(t, err, "42501", "permission denied for table "+table)
		}
	}
}

// An operator, holding no privilege on any table but SELECT on those of
// chunks, does all of chunks: register, check, run, drain, pause, resume,
// undo, report, inspect, status, a worker's pass and heartbeat, a campaign.
// It writes no table itself.
func TestRolesOperatorRunsEverything(t *testing.T) {
	t.Parallel()
	r := newRoles(t)
	seedOrders(t, r.Schema, "acme", 1, 8)
	seedOrders(t, r.Schema, "acme", 101, 4)
	op := r.connect(t, r.operator)

	p := goPlan("j", "acme", 1, 8, 2)
	if chk, err := driver.CheckPlan(ctx, op, p); err != nil || !chk.OK || chk.Job != "free" {
		t.Fatalf("check as the operator: %+v, %v", chk, err)
	}
	if created, err := driver.Register(ctx, op, p); err != nil || !created {
		t.Fatalf("register as the operator: %v, %v", created, err)
	}
	if res, err := driver.RunChunk(ctx, op, "j", nil); err != nil || res.NextIndex != 2 {
		t.Fatalf("run as the operator: %+v, %v", res, err)
	}
	if changed, err := fleet.Pause(ctx, op, driver.JobRef{ID: "j"}); err != nil || !changed {
		t.Fatalf("pause as the operator: %v, %v", changed, err)
	}
	if changed, err := fleet.Resume(ctx, op, driver.JobRef{ID: "j"}); err != nil || !changed {
		t.Fatalf("resume as the operator: %v, %v", changed, err)
	}
	if changed, err := fleet.PauseAfter(ctx, op, driver.JobRef{ID: "j"}, 1); err != nil || !changed {
		t.Fatalf("pause --after as the operator: %v, %v", changed, err)
	}
	pass, err := fleet.RunNext(ctx, op, "w1", fleet.PassOptions{})
	if err != nil || pass == nil || pass.JobID != "j" || !pass.Paused {
		t.Fatalf("a worker's pass as the operator: %+v, %v", pass, err)
	}
	if _, err := op.Exec(ctx, "select worker_heartbeat('w1', 'host', 1, now(), 1, 'idle', null), worker_gone('w1')"); err != nil {
		t.Fatalf("heartbeat as the operator: %v", err)
	}
	if changed, err := fleet.Resume(ctx, op, driver.JobRef{ID: "j"}); err != nil || !changed {
		t.Fatalf("resume as the operator: %v, %v", changed, err)
	}
	all, err := driver.Drain(ctx, r.dsn(r.operator), "j", 64)
	if err != nil || !all.Done || all.NextIndex != 8 {
		t.Fatalf("drain as the operator: %+v, %v", all, err)
	}
	rep, err := driver.Report(ctx, op, "j")
	if err != nil || len(rep.Matching) != 8 {
		t.Fatalf("report as the operator: %+v, %v", rep, err)
	}
	undo, err := driver.JobRef{ID: "j"}.RegisterUndo(ctx, op, "")
	if err != nil || !undo.Created || len(undo.Targets) != 8 {
		t.Fatalf("undo as the operator: %+v, %v", undo, err)
	}
	if all, err := driver.Drain(ctx, r.dsn(r.operator), "j-undo", 64); err != nil || !all.Done {
		t.Fatalf("drain the undo as the operator: %+v, %v", all, err)
	}
	if got := pgtest.MustString(t, r.Conn, "select count(*)::text from orders where id between 1 and 8 and state = 'pending' and revision = 5"); got != "8" {
		t.Fatalf("after the undo, %s of 8 orders are pending at revision 5", got)
	}
	if job, err := driver.InspectJob(ctx, op, "j-undo"); err != nil || job == nil || job.NextIndex != 8 {
		t.Fatalf("inspect as the operator: %+v, %v", job, err)
	}
	if st, err := fleet.Status(ctx, op); err != nil || len(st) != 2 {
		t.Fatalf("status as the operator: %+v, %v", st, err)
	}
	if out := pgtest.MustString(t, op, `select cancel_chunk('acme', '[{"id": 101, "revision": 3, "qty": 2}]') -> 0 ->> 'new_revision'`); out != "4" {
		t.Fatalf("cancel_chunk as the operator: %s", out)
	}
	camp := pgtest.MustString(t, op, "select campaign_create('c', 'acme', 1, array[102, 103], array[3, 3], array[2, 2])::text")
	if !strings.Contains(camp, `"created": true`) {
		t.Fatalf("campaign_create as the operator: %s", camp)
	}
	if got := pgtest.MustString(t, op, "select count(*)::text from job_audit"); got != "16" {
		t.Fatalf("the operator reads job_audit: %s rows, want 16", got)
	}

	wantNoTableWrites(t, op)
	// Nor can it execute a helper: the functions it may call are exactly
	// access_functions('operator').
	_, err = op.Exec(ctx, "select change_orders('acme', array[104], array[3], array[2], 'cancel')")
	pgtest.WantPgErrorContaining(t, err, "42501", "permission denied for function change_orders")
}

// A viewer reads everything a viewer needs and is refused every function
// that changes something, and every write, with 42501.
func TestRolesViewerOnlyReads(t *testing.T) {
	t.Parallel()
	r := newRoles(t)
	registerJob(t, r.Schema, "j", "acme", 1, 4, 2)
	r.Exec(t, "select run_chunk('j')")
	before := state(t, r.Schema)
	v := r.connect(t, r.viewer)

	if rep, err := driver.Report(ctx, v, "j"); err != nil || len(rep.Matching) != 2 || len(rep.Remaining) != 2 {
		t.Fatalf("report as the viewer: %+v, %v", rep, err)
	}
	if job, err := driver.InspectJob(ctx, v, "j"); err != nil || job == nil || job.NextIndex != 2 {
		t.Fatalf("inspect as the viewer: %+v, %v", job, err)
	}
	if st, err := fleet.Status(ctx, v); err != nil || len(st) != 1 || st[0].JobID != "j" {
		t.Fatalf("status as the viewer: %+v, %v", st, err)
	}
	if _, err := fleet.Workers(ctx, v); err != nil {
		t.Fatalf("workers as the viewer: %v", err)
	}
	if page := pgtest.MustString(t, v, "select status_page(null, 10) -> 'counts' ->> 'queued'"); page != "1" {
		t.Fatalf("status_page as the viewer: queued %s", page)
	}
	if got := pgtest.MustString(t, v, "select count(*)::text from job_audit"); got != "2" {
		t.Fatalf("the viewer reads job_audit: %s rows", got)
	}

	// Every function that changes something, called with any arguments:
	// refused before it runs.
	rows, err := r.Conn.Query(ctx, `select p.proname::text, p.pronargs
	  from `+r.Name+`.access_functions('all') as f join pg_proc as p on p.oid = f
	 except select p.proname::text, p.pronargs from `+r.Name+`.access_functions('viewer') as f join pg_proc as p on p.oid = f
	 order by 1`)
	if err != nil {
		t.Fatal(err)
	}
	type fn struct {
		Name  string
		NArgs int
	}
	writers, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fn])
	if err != nil {
		t.Fatal(err)
	}
	if len(writers) < 17 {
		t.Fatalf("only %d functions are operator-only: %v", len(writers), writers)
	}
	for _, f := range writers {
		args := strings.TrimSuffix(strings.Repeat("null, ", f.NArgs), ", ")
		_, err := v.Exec(ctx, "select "+f.Name+"("+args+")")
		pgtest.WantPgErrorContaining(t, err, "42501", "permission denied for function "+f.Name)
	}
	_, err = driver.RunChunk(ctx, v, "j", nil)
	pgtest.WantPgErrorContaining(t, err, "42501", "permission denied for function run_chunk")
	wantNoTableWrites(t, v)
	unchanged(t, r.Schema, "the viewer", before)
}

// The privileges each kind ends up with, read from the catalog: exactly
// access_functions(kind) and USAGE; SELECT on the tables of chunks and
// nothing else on any table; revoking operator leaves a viewer, revoking
// viewer leaves nothing. Only the owner can grant.
func TestRolesGrantAndRevoke(t *testing.T) {
	t.Parallel()
	r := newRoles(t)
	privileges := func(role pgtest.Role) string {
		t.Helper()
		return pgtest.MustString(t, r.Conn, `select jsonb_build_object(
		  'usage', has_schema_privilege($1, $2, 'USAGE'),
		  'create', has_schema_privilege($1, $2, 'CREATE'),
		  'functions', (select coalesce(jsonb_agg(p.proname || '(' || oidvectortypes(p.proargtypes) || ')' order by p.proname, oidvectortypes(p.proargtypes)), '[]') from pg_proc as p
		                 where p.pronamespace = $2::regnamespace and has_function_privilege($1, p.oid, 'EXECUTE')),
		  'tables', (select coalesce(jsonb_object_agg(c.relname, (select jsonb_agg(k order by k) from unnest(array['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) as k
		                                                            where has_table_privilege($1, c.oid, k))), '{}')
		               from pg_class as c where c.relnamespace = $2::regnamespace and c.relkind = 'r'
		                and has_table_privilege($1, c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')))::text`,
			role.Name, r.Name)
	}
	// By signature: a job function and its tenant-scoped overload (tenant, job_id, ...) are granted together.
	viewerFunctions := `["campaign_report(text)", "campaign_status(text)", "change_list()", "change_show(text)", "inspect_job(text)", "inspect_job(text, text)",
	  "installed_version()", "job_lineage(text)", "job_lineage(text, text)", "job_proposals(text)", "job_status()", "policy_list()", "queue_channel()", "report(text)", "report(text, text)",
	  "status_page(text, integer)", "verify_campaign(text)", "verify_job(text)", "worker_status()"]`
	// An approver (two people): a viewer's, the read-only checks of a plan, and approve.
	approverFunctions := `["approve(text, text, text)", "campaign_approve(text, text, text)", "campaign_check(text, integer)", "campaign_report(text)", "campaign_status(text)",
	  "change_list()", "change_show(text)", "check_change(text, jsonb)", "check_plan(jsonb)", "inspect_job(text)", "inspect_job(text, text)",
	  "installed_version()", "job_lineage(text)", "job_lineage(text, text)", "job_proposals(text)", "job_status()", "plan_digest(text, jsonb)", "policy_list()", "queue_channel()", "report(text)", "report(text, text)",
	  "status_page(text, integer)", "verify_campaign(text)", "verify_job(text)", "worker_status()"]`
	operatorFunctions := `["abandon_job(text, text)", "abandon_job(text, text, text)", "archive_jobs(interval)", "campaign_archive(text)", "campaign_check(text, integer)", "campaign_create(text, text, integer, integer[], integer[], integer[], integer)",
	  "campaign_create_change(text, text, text, integer, jsonb, text[], integer, text[])",
	  "campaign_pause(text)", "campaign_report(text)", "campaign_resume(text)", "campaign_skip(text, text)", "campaign_status(text)", "campaign_undo(text, text)",
	  "cancel_chunk(text, jsonb)", "change_list()", "change_show(text)", "check_change(text, jsonb)", "check_plan(jsonb)", "inspect_job(text)", "inspect_job(text, text)", "installed_version()", "job_lineage(text)",
	  "job_lineage(text, text)", "job_proposals(text)", "job_status()", "pause_job(text)", "pause_job(text, text)", "pause_job_after(text, integer)",
	  "pause_job_after(text, text, integer)", "plan_digest(text, jsonb)", "policy_list()", "queue_channel()", "record_progress(jsonb)", "register(jsonb)", "register_change(text, jsonb)",
	  "register_undo(text, text)", "register_undo(text, text, text)", "report(text)", "report(text, text)", "resume_job(text)",
	  "resume_job(text, text)", "run_chunk(text)", "run_chunk(text, text)", "run_next_chunk(text, integer, integer, integer, text, boolean)",
	  "skip_target(text, jsonb, text)", "skip_target(text, text, jsonb, text)", "status_page(text, integer)", "verify_campaign(text)", "verify_job(text)", "worker_gone(text)",
	  "worker_heartbeat(text, text, integer, timestamp with time zone, bigint, text, text)", "worker_status()"]`
	tables := `{"jobs": ["SELECT"], "job_audit": ["SELECT"], "job_approval": ["SELECT"], "job_kind": ["SELECT"], "job_queue": ["SELECT"],
	  "job_progress": ["SELECT"], "workers": ["SELECT"], "campaigns": ["SELECT"], "campaign_jobs": ["SELECT"], "campaign_progress": ["SELECT"], "job_ends": ["SELECT"], "job_skips": ["SELECT"], "job_archive": ["SELECT"],
	  "approval_policy": ["SELECT"], "proposals": ["SELECT"],
	  "changes": ["SELECT"], "job_change": ["SELECT"], "change_audit": ["SELECT"],
	  "change_jobs": ["SELECT"], "change_targets": ["SELECT"], "change_chunks": ["SELECT"]}`
	sameJSON(t, "operator", privileges(r.operator), `{"usage": true, "create": false, "functions": `+operatorFunctions+`, "tables": `+tables+`}`)
	sameJSON(t, "viewer", privileges(r.viewer), `{"usage": true, "create": false, "functions": `+viewerFunctions+`, "tables": `+tables+`}`)

	owner := r.connect(t, r.owner)
	g, err := driver.Revoke(ctx, owner, r.operator.Name, driver.Operator)
	if err != nil || !g.Revoked || len(g.Functions) != 33 || len(g.Tables) != 0 {
		t.Fatalf("revoke operator: %+v, %v", g, err)
	}
	sameJSON(t, "operator revoked", privileges(r.operator), `{"usage": true, "create": false, "functions": `+viewerFunctions+`, "tables": `+tables+`}`)
	if _, err := driver.Revoke(ctx, owner, r.operator.Name, driver.Viewer); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "viewer revoked", privileges(r.operator), `{"usage": false, "create": false, "functions": [], "tables": {}}`)

	// An approver; revoked, a viewer. An operator that is an approver too
	// keeps the checks an operator needs when it stops approving.
	if _, err := driver.Grant(ctx, owner, r.viewer.Name, driver.Approver); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "approver", privileges(r.viewer), `{"usage": true, "create": false, "functions": `+approverFunctions+`, "tables": `+tables+`}`)
	if g, err := driver.Revoke(ctx, owner, r.viewer.Name, driver.Approver); err != nil || len(g.Functions) != 6 {
		t.Fatalf("revoke approver: %+v, %v", g, err)
	}
	sameJSON(t, "approver revoked", privileges(r.viewer), `{"usage": true, "create": false, "functions": `+viewerFunctions+`, "tables": `+tables+`}`)
	for _, a := range []driver.Access{driver.Operator, driver.Approver} {
		if _, err := driver.Grant(ctx, owner, r.operator.Name, a); err != nil {
			t.Fatal(err)
		}
	}
	if g, err := driver.Revoke(ctx, owner, r.operator.Name, driver.Approver); err != nil || len(g.Functions) != 2 {
		t.Fatalf("revoke approver of an operator: %+v, %v", g, err)
	}
	sameJSON(t, "operator, approver revoked", privileges(r.operator), `{"usage": true, "create": false, "functions": `+operatorFunctions+`, "tables": `+tables+`}`)
	if _, err := driver.Revoke(ctx, owner, r.operator.Name, driver.Viewer); err != nil {
		t.Fatal(err)
	}

	// Bad input names the field; only the owner (or a superuser) grants.
	if _, err := driver.Grant(ctx, owner, "nobody_at_all", driver.Operator); !errors.Is(err, driver.ErrInvalid) ||
		!strings.Contains(err.Error(), `role: there is no role "nobody_at_all"`) {
		t.Fatalf("grant to no role: %v", err)
	}
	if _, err := driver.Grant(ctx, owner, r.viewer.Name, "admin"); !errors.Is(err, driver.ErrInvalid) ||
		!strings.Contains(err.Error(), "access: must be operator, viewer or approver") {
		t.Fatalf("grant admin: %v", err)
	}
	_, err = driver.Grant(ctx, r.connect(t, r.viewer), r.viewer.Name, driver.Operator)
	pgtest.WantPgErrorContaining(t, err, "42501", "permission denied for function grant_access")
	// An operator cannot grant either: grant_access is the owner's.
	if _, err := driver.Grant(ctx, owner, r.operator.Name, driver.Operator); err != nil {
		t.Fatal(err)
	}
	_, err = driver.Grant(ctx, r.connect(t, r.operator), r.viewer.Name, driver.Operator)
	pgtest.WantPgErrorContaining(t, err, "42501", "permission denied for function grant_access")
}

// The classic attack on SECURITY DEFINER functions: a caller who controls a
// schema on its search_path, and pg_temp, puts lookalikes of the tables and
// of built-in functions and operators there, hoping a chunks function runs
// them with the owner's rights. None is ever reached: every function pins
// search_path to its own schema, then pg_temp, and the inlined helpers are
// only ever run inside those.
func TestRolesSearchPathAttack(t *testing.T) {
	t.Parallel()
	r := newRoles(t)
	registerJob(t, r.Schema, "j", "acme", 1, 4, 2)
	seedOrders(t, r.Schema, "acme", 11, 2)
	evil := "evil_" + r.Name
	r.Exec(t, "create schema "+evil+" authorization "+pgx.Identifier{r.operator.Name}.Sanitize())
	t.Cleanup(func() {
		if _, err := r.Conn.Exec(ctx, "drop schema if exists "+evil+" cascade"); err != nil {
			t.Errorf("drop schema %s: %v", evil, err)
		}
	})
	op := r.connect(t, r.operator)
	// Every lookalike raises: reaching one fails the call that did.
	trap := func(name string) string {
		return fmt.Sprintf("begin raise exception 'TRAPPED: %s ran as %%', current_user; end", name)
	}
	for _, sql := range []string{
		"create table %[1]s.jobs(job_id text, tenant text, targets jsonb, chunk_size int, next_index int)",
		"create table %[1]s.orders(id int, tenant text, qty int, state text, revision int)",
		"create table %[1]s.job_audit(job_id text, ordinal int, id int, previous_revision int, new_revision int, qty int)",
		"create table %[1]s.job_approval(job_id text, kind text, tenant text, chunk_size int, targets_sha256 text)",
		"create table %[1]s.job_queue(job_id text, visible_at timestamptz, paused boolean)",
		"create temporary table jobs(job_id text, tenant text, targets jsonb, chunk_size int, next_index int)",
		"create temporary table orders(id int, tenant text, qty int, state text, revision int)",
		"create temporary table job_approval(job_id text, kind text, tenant text, chunk_size int, targets_sha256 text)",
		"create function %[1]s.jsonb_array_length(jsonb) returns int language plpgsql as $$" + trap("jsonb_array_length") + "$$",
		"create function %[1]s.sha256(bytea) returns bytea language plpgsql as $$" + trap("sha256") + "$$",
		"create function %[1]s.encode(bytea, text) returns text language plpgsql as $$" + trap("encode") + "$$",
		"create function %[1]s.convert_to(text, name) returns bytea language plpgsql as $$" + trap("convert_to") + "$$",
		"create function %[1]s.pg_notify(text, text) returns void language plpgsql as $$" + trap("pg_notify") + "$$",
		"create function %[1]s.clock_timestamp() returns timestamptz language plpgsql as $$" + trap("clock_timestamp") + "$$",
		"create function %[1]s.excerpt(text, boolean) returns text language plpgsql as $$" + trap("excerpt") + "$$",
		"create function %[1]s.targets_sha256(jsonb) returns text language plpgsql as $$" + trap("targets_sha256") + "$$",
		"create function %[1]s.eq(text, text) returns boolean language plpgsql as $$" + trap("operator =") + "$$",
		"create operator %[1]s.= (leftarg = text, rightarg = text, function = %[1]s.eq)",
		"create function pg_temp.jsonb_array_length(jsonb) returns int language plpgsql as $$" + trap("pg_temp.jsonb_array_length") + "$$",
		"create function pg_temp.run_lock_key(text) returns bigint language plpgsql as $$" + trap("pg_temp.run_lock_key") + "$$",
		"set search_path = " + evil + ", pg_temp, pg_catalog, %[2]s",
	} {
		sql = strings.NewReplacer("%[1]s", evil, "%[2]s", r.Name).Replace(sql)
		if _, err := op.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// The lookalikes are live: an unqualified call reaches them.
	_, err := op.Exec(ctx, "select jsonb_array_length('[]')")
	pgtest.WantPgErrorContaining(t, err, "P0001", "TRAPPED: jsonb_array_length ran as "+r.operator.Name)

	q := pgx.Identifier{r.Name}.Sanitize() + "."
	for _, c := range []struct{ sql, want string }{
		{q + "run_next_chunk('w') ->> 'next_index'", "2"},
		{q + "run_chunk('j') ->> 'next_index'", "4"},
		{q + "report('j') ->> 'matching'", "[1, 2, 3, 4]"},
		{q + "inspect_job('j') ->> 'next_index'", "4"},
		{q + "check_plan($1::jsonb) ->> 'ok'", "true"},
		{q + "register($1::jsonb)::text", "true"},
		{q + "pause_job('j2')::text", "true"},
		{q + "resume_job('j2')::text", "true"},
		{q + "run_chunk('j2') ->> 'next_index'", "1"},
		{"pg_catalog.jsonb_array_length(" + q + "job_status())::text", "2"},
		{"pg_catalog.jsonb_array_length(" + q + "status_page(null, 5) -> 'jobs')::text", "2"},
		{q + "cancel_chunk('acme', '[{\"id\": 12, \"revision\": 3, \"qty\": 2}]') -> 0 ->> 'new_revision'", "4"},
		{q + "register_undo('j2') ->> 'created'", "true"},
	} {
		args := []any{plan("j2", "acme", 11, 1, 1)}
		if !strings.Contains(c.sql, "$1") {
			args = nil
		}
		got, err := pgtest.TryString(op, "select "+c.sql, args...)
		if err != nil || got != c.want {
			t.Fatalf("select %s: got %q, %v; want %q", c.sql, got, err, c.want)
		}
	}
	// The lookalike tables are as the caller left them: empty.
	if got := pgtest.MustString(t, op, "select (select count(*) from "+evil+".jobs) + (select count(*) from pg_temp.jobs) + (select count(*) from pg_temp.job_approval)"); got != "0" {
		t.Fatalf("the lookalike tables got %s rows", got)
	}
}

// An orders table that the application owned before chunks came stays the
// application's: migrate --owner hands over only what it or the schema's
// owner owned, and grants the owner what the functions need on orders.
func TestRolesApplicationKeepsItsOrders(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	name := pgtest.NewSchemaName(t)
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "drop schema if exists "+name+" cascade"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	app, owner, op := pgtest.NewRole(t, pgtest.DSN(), "app"), pgtest.NewRole(t, pgtest.DSN(), "owner"), pgtest.NewRole(t, pgtest.DSN(), "op")
	for _, sql := range []string{
		"create schema " + name,
		"create table " + name + ".orders(id integer primary key, tenant text not null, qty integer not null, state text not null, revision integer not null)",
		"alter table " + name + ".orders owner to " + app.Name,
		"grant usage on schema " + name + " to " + app.Name,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := driver.Migrate(ctx, admin, name, driver.MigrateOptions{Owner: owner.Name}); err != nil {
		t.Fatal(err)
	}
	got := pgtest.MustString(t, admin, `select jsonb_build_object('orders', c.relowner::regrole::text, 'jobs', (select j.relowner::regrole::text from pg_class as j where j.oid = $2::text::regclass),
	    'owner may', jsonb_build_array(has_table_privilege($3, c.oid, 'SELECT'), has_table_privilege($3, c.oid, 'UPDATE'), has_table_privilege($3, c.oid, 'DELETE')))::text
	  from pg_class as c where c.oid = $1::text::regclass`, name+".orders", name+".jobs", owner.Name)
	sameJSON(t, "owners", got, fmt.Sprintf(`{"orders": %q, "jobs": %q, "owner may": [true, true, false]}`, app.Name, owner.Name))

	// The application writes its orders; an operator runs the job.
	appConn := pgtest.Connect(t, pgtest.WithSearchPath(app.DSN(pgtest.DSN()), name))
	if _, err := appConn.Exec(ctx, "insert into orders values (1, 'acme', 2, 'pending', 3)"); err != nil {
		t.Fatal(err)
	}
	if _, err := driver.Grant(ctx, pgtest.Connect(t, pgtest.WithSearchPath(owner.DSN(pgtest.DSN()), name)), op.Name, driver.Operator); err != nil {
		t.Fatal(err)
	}
	opConn := pgtest.Connect(t, pgtest.WithSearchPath(op.DSN(pgtest.DSN()), name))
	if _, err := driver.Register(ctx, opConn, goPlan("j", "acme", 1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	if res, err := driver.RunChunk(ctx, opConn, "j", nil); err != nil || !res.Done {
		t.Fatalf("the operator's chunk: %+v, %v", res, err)
	}
	if got := pgtest.MustString(t, appConn, "select state || ' ' || revision from orders where id = 1"); got != "cancelled 4" {
		t.Fatalf("order 1: %s", got)
	}
}

// Any role that can connect can take the advisory lock key that says "a
// chunk of this job is in flight" (run_lock_key is no secret). Such a lock
// decides nothing: a plain role's lock on every job's key leaves a queued
// job queued and a paused one paused, in job_status, status_page (its jobs
// and its counts, which the metrics read) and campaign_status. A paused job
// stays paused even under the lock of a role that may run chunks; an
// unpaused job under such a lock (what a chunk in flight holds) is running.
func TestRolesForeignLockIsNoChunk(t *testing.T) {
	t.Parallel()
	r := newRoles(t)
	registerJob(t, r.Schema, "q", "acme", 1, 4, 2)
	registerJob(t, r.Schema, "p", "acme", 11, 4, 2)
	seedOrders(t, r.Schema, "acme", 21, 4)
	op := r.connect(t, r.operator)
	if _, err := fleet.Pause(ctx, op, driver.JobRef{ID: "p"}); err != nil {
		t.Fatal(err)
	}
	pgtest.MustString(t, op, "select campaign_create('c', 'acme', 1, array[21, 22], array[3, 3], array[2, 2])::text")
	pgtest.MustString(t, op, "select campaign_create('d', 'acme', 1, array[23, 24], array[3, 3], array[2, 2])::text")
	pgtest.MustString(t, op, "select campaign_pause('d')::text")
	jobs := []string{
		pgtest.MustString(t, r.Conn, "select job_id from campaign_jobs where campaign = 'c'"),
		pgtest.MustString(t, r.Conn, "select job_id from campaign_jobs where campaign = 'd'"),
		"q", "p",
	}

	// states is what status says of every job, with running_in, and what
	// campaign_status counts.
	states := func() string {
		t.Helper()
		return pgtest.MustString(t, r.Conn, `select jsonb_build_object(
		    'job_status', (select jsonb_object_agg(j ->> 'job_id', concat(j ->> 'state', ' ', j ->> 'running_in')) from jsonb_array_elements(job_status()) as j),
		    'status_page', (select jsonb_object_agg(j ->> 'job_id', concat(j ->> 'state', ' ', j ->> 'running_in')) from jsonb_array_elements(status_page(null, 10) -> 'jobs') as j),
		    'counts', status_page(null, 0) -> 'counts',
		    'campaigns', (select jsonb_object_agg(c, jsonb_build_object('running', s -> 'jobs_running', 'paused', s -> 'jobs_paused', 'queued', s -> 'jobs_queued'))
		                    from unnest(array['c', 'd']) as c, campaign_status(c) as s))::text`)
	}
	want := fmt.Sprintf(`{"job_status": {"p": "paused ", "q": "queued ", %[1]q: "queued ", %[2]q: "paused "},
	  "status_page": {"p": "paused ", "q": "queued ", %[1]q: "queued ", %[2]q: "paused "},
	  "counts": {"paused": 2, "queued": 2},
	  "campaigns": {"c": {"running": 0, "paused": 0, "queued": 1}, "d": {"running": 0, "paused": 1, "queued": 0}}}`, jobs[0], jobs[1])
	sameJSON(t, "before any lock", states(), want)

	// lockAll takes, on conn, every job's key (computed here: run_lock_key
	// is a helper that no caller may execute, but the key is no secret).
	lockAll := func(conn *pgx.Conn) {
		t.Helper()
		for _, job := range jobs {
			key := pgtest.MustString(t, r.Conn, "select run_lock_key($1)::text", job)
			if _, err := conn.Exec(ctx, "select pg_advisory_lock($1::bigint)", key); err != nil {
				t.Fatalf("lock %s: %v", job, err)
			}
		}
	}
	// A role with no chunks access at all: it can CONNECT, so it can lock.
	plain := pgtest.NewRole(t, pgtest.DSN(), "plain")
	stranger := pgtest.Connect(t, plain.DSN(pgtest.DSN()+" application_name=fake-worker"))
	lockAll(stranger)
	if got := pgtest.MustString(t, r.Conn, "select count(*)::text from pg_locks where locktype = 'advisory' and pid = $1", stranger.PgConn().PID()); got != "4" {
		t.Fatalf("the plain role holds %s advisory locks, want 4", got)
	}
	sameJSON(t, "under a plain role's locks", states(), want)
	if _, err := stranger.Exec(ctx, "select pg_advisory_unlock_all()"); err != nil {
		t.Fatal(err)
	}

	// An operator's lock (it may run chunks) says running, but never over a pause.
	lockAll(op)
	sameJSON(t, "under an operator's locks", states(), fmt.Sprintf(`{
	  "job_status": {"p": "paused ", "q": "running %[3]s", %[1]q: "running %[3]s", %[2]q: "paused "},
	  "status_page": {"p": "paused ", "q": "running %[3]s", %[1]q: "running %[3]s", %[2]q: "paused "},
	  "counts": {"paused": 2, "running": 2},
	  "campaigns": {"c": {"running": 1, "paused": 0, "queued": 0}, "d": {"running": 0, "paused": 1, "queued": 0}}}`, jobs[0], jobs[1], "pid "+fmt.Sprint(op.PgConn().PID())))
	if _, err := op.Exec(ctx, "select pg_advisory_unlock_all()"); err != nil {
		t.Fatal(err)
	}
}

// The schema's owner is the role every function runs as: grant refuses to
// give it or take from it anything (before, revoking its viewer took its own
// USAGE and EXECUTE, and every call of every role failed as if chunks were
// not installed). And migrate gives back what the owner lost all the same
// (a REVOKE by hand), so running it repairs the install.
func TestRolesOwnerKeepsItsPrivileges(t *testing.T) {
	t.Parallel()
	r := newRoles(t)
	registerJob(t, r.Schema, "j", "acme", 1, 4, 1)
	owner := r.connect(t, r.owner)
	// Its privileges: USAGE, SELECT and UPDATE on jobs, and the number of
	// functions of the schema it may not execute.
	privileges := func() string {
		t.Helper()
		return pgtest.MustString(t, r.Conn, `select jsonb_build_object(
		    'usage', has_schema_privilege($1, $2, 'USAGE'),
		    'jobs', has_table_privilege($1, $2 || '.jobs', 'SELECT, UPDATE'),
		    'functions', (select count(*) from pg_proc where pronamespace = $2::regnamespace and not has_function_privilege($1, oid, 'EXECUTE')))::text`,
			r.owner.Name, r.Name)
	}
	const owned = `{"usage": true, "jobs": true, "functions": 0}`
	sameJSON(t, "the owner's privileges", privileges(), owned)
	for _, c := range []struct {
		conn   *pgx.Conn
		access driver.Access
		revoke bool
	}{{owner, driver.Viewer, true}, {owner, driver.Operator, true}, {owner, driver.Viewer, false}, {r.Conn, driver.Viewer, true}} {
		change := driver.Grant
		if c.revoke {
			change = driver.Revoke
		}
		_, err := change(ctx, c.conn, r.owner.Name, c.access)
		if !errors.Is(err, driver.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("role: %q owns schema %s, and every chunks function runs with its privileges", r.owner.Name, r.Name)) {
			t.Fatalf("grant %s (revoke %v) to the owner: %v", c.access, c.revoke, err)
		}
	}
	sameJSON(t, "the owner's privileges after the refused grants", privileges(), owned)

	// What grant --revoke --viewer did to the owner before, done by hand.
	for _, sql := range []string{
		"revoke all on table %[1]s.jobs, %[1]s.job_audit from %[2]s",
		"revoke execute on function %[1]s.run_chunk(text), %[1]s.report(text), %[1]s.change_orders(text, integer[], integer[], integer[], text) from %[2]s",
		"revoke usage on schema %[1]s from %[2]s",
	} {
		if _, err := owner.Exec(ctx, fmt.Sprintf(sql, r.Name, pgx.Identifier{r.owner.Name}.Sanitize())); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	sameJSON(t, "the owner's privileges revoked by hand", privileges(), `{"usage": false, "jobs": false, "functions": 3}`)
	op := r.connect(t, r.operator)
	if _, err := driver.RunChunk(ctx, op, "j", nil); err == nil {
		t.Fatal("a chunk ran with the owner's privileges revoked")
	}
	if err := driver.Migrate(ctx, pgtest.Connect(t, pgtest.DSN()), r.Name, driver.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "the owner's privileges after migrate", privileges(), owned)
	if res, err := driver.RunChunk(ctx, op, "j", nil); err != nil || res.NextIndex != 1 {
		t.Fatalf("a chunk after migrate: %+v, %v", res, err)
	}
	if rep, err := driver.Report(ctx, op, "j"); err != nil || len(rep.Matching) != 1 {
		t.Fatalf("report after migrate: %+v, %v", rep, err)
	}
}
