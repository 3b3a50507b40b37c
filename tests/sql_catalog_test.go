package tests

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// inlined are the helpers that deliberately have no SET clause: a plain SQL
// expression (no table, only built-ins) that the planner inlines into its
// callers, which all pin search_path; a SET clause would prevent inlining.
// Some are set-returning, inlined into a FROM clause: their call is a FROM
// item (%s: the function's qualified name).
var inlined = map[string]struct{ call, shows string }{
	"target_problem":      {"(e, 'x', 0) from jsonb_array_elements('[{}]') e", "CASE WHEN"},
	"targets_look_normal": {"(e) from jsonb_array_elements('[[]]') e", "~"},
	"excerpt":             {"(e::text, true) from jsonb_array_elements('[1]') e", "length("},
	"run_lock_key":        {"(j) from unnest(array['a']) j", "hashtextextended"},
	"worker_lock_key":     {"(w) from unnest(array['a']) w", "hashtextextended"},
	"job_state":           {"(i, 2, false, true, false, false, false) from unnest(array[1]) i", "CASE WHEN"},
	"campaign_job_id":     {"(j, i) from unnest(array['a'], array[0]) as x(j, i)", "lpad"},
	"state_before":        {"(k) from unnest(array['cancel']) k", "CASE k"},
	"state_after":         {"(k) from unnest(array['cancel']) k", "CASE k"},
	"order_problem":       {"(e, 1, 1, 'a', 'pending', e::integer, 'a', 'pending', 1, 1) from unnest(array[1]) e", "CASE WHEN"},
	"job_shape_problem":   {"('j', 'a', e, 1, 0) from jsonb_array_elements('[[]]') e", "CASE WHEN"},
	"registration_problem": {"('j', 'cancel', null, 'a', e, 1, true, 'a', e, 1) from jsonb_array_elements('[[]]') e",
		"CASE WHEN"},
	"targets_sha256": {"(e) from jsonb_array_elements('[[]]') e", "sha256("},
	// The forms on the targets' text run_chunk makes once (issue 26).
	"targets_text_look_normal": {"(e::text) from jsonb_array_elements('[[]]') e", "~"},
	"targets_text_sha256":      {"(e::text) from jsonb_array_elements('[[]]') e", "sha256("},
	"job_text_shape_problem":   {"('j', 'a', e, e::text, 1, 0) from jsonb_array_elements('[[]]') e", "CASE WHEN"},
	"digest_approval_problem": {"('j', 'cancel', 'a', e, e::text, 1, 'cancel', 'a', 'x', 1) from jsonb_array_elements('[[]]') e",
		"CASE WHEN"},
	"is_worker":        {"(w) from unnest(array['a']) w", "~"},
	"approval_problem": {"('j', 'cancel', 'a', e, 1, 'cancel', 'a', 'x', 1) from jsonb_array_elements('[[]]') e", "CASE WHEN"},
	// limits() and its readers fold to constants (README "Decisions": the value rules, once).
	"limits":            {"() -> 'targets_max' from unnest(array[1]) i", "'64'::jsonb"},
	"limit_of":          {"(k) from unnest(array['targets_max']) k", "->>"},
	"in_range":          {"('qty', i) from unnest(array[1]) i", "'1000'::bigint"},
	"target_in_range":   {"(i, i, i) from unnest(array[1]) i", "'2147483646'::bigint"},
	"is_name":           {"(n) from unnest(array['a']) n", "'^[A-Za-z0-9_-]{1,64}$'"},
	"range_problem":     {"('qty', i) from unnest(array[1]) i", "format("},
	"campaign_job_size": {"(i, false) from unnest(array[10]) i", "%"},
	"job_target_rows":   {"count(t.e) from unnest(array['j']) as u(j), %s(u.j) as t", "change_targets"},
	// What run_chunk asks before every chunk of a declared change (issue 35),
	// planned once with the rest of its check.
	"writer_config":           {"() from unnest(array[1]) i", "search_path=pg_catalog"},
	"temp_objects_problem":    {"count(*) from %s() as t", "pg_my_temp_schema"},
	"writer_function_problem": {"string_agg(t, ',') from unnest(array['x()']) as f(s), %s(f.s) as t", "to_regprocedure"},
	"change_key_problem":      {"string_agg(t, ',') from jsonb_array_elements('[{}]') as d(e), %s(d.e) as t", "to_regclass"},
}

// docs/contract.md §6: every function is documented with COMMENT ON; every
// one runs with its own schema's search_path, so neither the caller's
// search_path nor a lookalike object in pg_temp can change what it reads or
// calls; the functions an operator or a viewer may call (access_functions)
// are SECURITY DEFINER, every other one runs with its caller's rights; and
// PUBLIC may execute none of them (docs/roles.md).
func TestSQLFunctionCatalog(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	var functions []struct {
		Name     string   `json:"name"`
		Args     string   `json:"args"`
		Comment  *string  `json:"comment"`
		SecDef   bool     `json:"secdef"`
		Config   []string `json:"config"`
		Language string   `json:"language"`
		API      bool     `json:"api"`
		Public   bool     `json:"public"`
	}
	out := pgtest.MustString(t, s.Conn, `select jsonb_agg(jsonb_build_object('name', p.proname,
	    'args', pg_get_function_identity_arguments(p.oid), 'comment', obj_description(p.oid, 'pg_proc'),
	    'secdef', p.prosecdef, 'config', p.proconfig, 'language', l.lanname,
	    'api', p.oid in (select f from `+pgx.Identifier{s.Name}.Sanitize()+`.access_functions('all') as f),
	    'public', exists (select from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) as a
	                       where a.grantee = 0 and a.privilege_type = 'EXECUTE')) order by p.proname)::text
	  from pg_proc p join pg_language l on l.oid = p.prolang where p.pronamespace = $1::regnamespace`, s.Name)
	if err := json.Unmarshal([]byte(out), &functions); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range functions {
		names = append(names, f.Name)
		t.Run(f.Name, func(t *testing.T) {
			if f.Comment == nil || len(*f.Comment) < 20 {
				t.Errorf("%s(%s): comment %v", f.Name, f.Args, f.Comment)
			}
			// The writer's dynamic function runs as the writer role, with
			// its pinned settings (docs/roles.md "Code on your tables").
			writers := f.Name == "writer_exec"
			if f.SecDef != (f.API || writers) {
				t.Errorf("%s(%s): SECURITY DEFINER is %v, want %v (it is one an operator or a viewer calls: %v)", f.Name, f.Args, f.SecDef, f.API, f.API)
			}
			if f.Public {
				t.Errorf("%s(%s): PUBLIC may execute it", f.Name, f.Args)
			}
			want := []string{"search_path=" + s.Name + ", pg_temp"}
			switch f.Name {
			case "writer_exec":
				want = []string{"search_path=pg_catalog, pg_temp", "TimeZone=UTC", "DateStyle=ISO, MDY", "IntervalStyle=postgres", "extra_float_digits=3"}
			case "run_job_chunk": // run_chunk's body, and run_next_chunk's chunk
				want = append(want, "lock_timeout=500ms", "enable_seqscan=off", "enable_bitmapscan=off")
			case "run_chunk": // the contract's function bounds its lock waits itself (\df+)
				if f.Args == "job_id text" {
					want = append(want, "lock_timeout=500ms")
				}
			case "change_orders", "change_orders_refused":
				// Their orders' lookups stay one probe per id, in id order (the lock order).
				want = append(want, "enable_seqscan=off", "enable_bitmapscan=off")
			case "run_next_chunk":
				// Their keyed lookups stay on the indexes in a session that planned
				// them on near-empty tables (sql_plans_test.go).
				want = append(want, "enable_seqscan=off")
			case "campaign_report":
				// One read of the table covers every committed target of the campaign;
				// a JIT compile would cost more than the query.
				want = append(want, "jit=off")
			case "pause_job", "pause_job_after", "resume_job", "abandon_job", "skip_target", "register_undo", "campaign_pause", "campaign_resume", "campaign_undo", "campaign_skip",
				"approve", "campaign_approve":
				want = append(want, "lock_timeout=5s")
			}
			if in, ok := inlined[f.Name]; ok {
				// The exception proves its worth: it is SQL and really is inlined.
				if f.Config != nil {
					t.Errorf("%s(%s): proconfig %q, want none (it could not be inlined)", f.Name, f.Args, f.Config)
				}
				want = nil
				if f.Language != "sql" {
					t.Errorf("%s(%s): language %s, want sql", f.Name, f.Args, f.Language)
				}
				query := "select " + pgx.Identifier{s.Name, f.Name}.Sanitize() + in.call
				if strings.Contains(in.call, "%s") {
					query = "select " + fmt.Sprintf(in.call, pgx.Identifier{s.Name, f.Name}.Sanitize())
				}
				plan := explain(t, s, query)
				if strings.Contains(plan, f.Name+"(") || !strings.Contains(plan, in.shows) {
					t.Errorf("%s is not inlined:\n%s", f.Name, plan)
				}
			}
			for _, setting := range want {
				if !slices.Contains(f.Config, setting) {
					t.Errorf("%s(%s): proconfig %q, want it to contain %q", f.Name, f.Args, f.Config, setting)
				}
			}
			// Only run_chunk's body (run_job_chunk) and the operator's controls (pause_job,
			// pause_job_after, resume_job, register_undo, campaign_pause,
			// campaign_resume) bound their lock
			// waits; no function changes another timeout or the role it
			// runs as.
			for _, setting := range f.Config {
				name, _, _ := strings.Cut(setting, "=")
				if name == "lock_timeout" && !slices.Contains([]string{"run_chunk", "run_job_chunk", "pause_job", "pause_job_after", "resume_job", "abandon_job", "skip_target", "register_undo", "campaign_pause", "campaign_resume", "campaign_undo", "campaign_skip", "approve", "campaign_approve"}, f.Name) ||
					name == "statement_timeout" || name == "role" ||
					name == "session_authorization" {
					t.Errorf("%s(%s): unexpected setting %q", f.Name, f.Args, setting)
				}
			}
		})
	}
	if want := shippedFunctions(t); !slices.Equal(names, want) {
		t.Fatalf("functions %v, want %v", names, want)
	}

	// The documented signatures and return types of §6, and their
	// tenant-scoped overloads, the router's signatures (§8).
	sameJSON(t, "signatures", pgtest.MustString(t, s.Conn, `select jsonb_object_agg(p.proname || '/' || p.pronargs,
	    pg_get_function_identity_arguments(p.oid) || ' -> ' || pg_get_function_result(p.oid) || ' ' || p.provolatile::text)::text
	  from pg_proc p where p.pronamespace = $1::regnamespace
	   and p.proname in ('register', 'inspect_job', 'cancel_chunk', 'run_chunk', 'report')`, s.Name), `{
	  "register/1": "plan jsonb -> boolean v",
	  "inspect_job/1": "job_id text -> jsonb s",
	  "inspect_job/2": "tenant text, job_id text -> jsonb s",
	  "cancel_chunk/2": "tenant text, items jsonb -> jsonb v",
	  "run_chunk/1": "job_id text -> jsonb v",
	  "run_chunk/2": "tenant text, job_id text -> jsonb v",
	  "report/1": "job_id text -> jsonb s",
	  "report/2": "tenant text, job_id text -> jsonb s"}`)
	// And those of the operator's safety functions (docs/safety.md).
	sameJSON(t, "safety signatures", pgtest.MustString(t, s.Conn, `select jsonb_object_agg(p.proname || '/' || p.pronargs,
	    pg_get_function_arguments(p.oid) || ' -> ' || pg_get_function_result(p.oid) || ' ' || p.provolatile::text)::text
	  from pg_proc p where p.pronamespace = $1::regnamespace
	   and p.proname in ('check_plan', 'register_undo', 'pause_job_after', 'job_lineage')`, s.Name), `{
	  "check_plan/1": "plan jsonb -> jsonb s",
	  "register_undo/2": "job_id text, new_job_id text DEFAULT NULL::text -> jsonb v",
	  "register_undo/3": "tenant text, job_id text, new_job_id text -> jsonb v",
	  "pause_job_after/2": "job_id text, after integer -> boolean v",
	  "pause_job_after/3": "tenant text, job_id text, after integer -> boolean v",
	  "job_lineage/1": "job_id text -> jsonb s",
	  "job_lineage/2": "tenant text, job_id text -> jsonb s"}`)

	// The pinned search_path at work: a session whose search_path puts
	// lookalike tables first (a temporary orders and jobs) still reaches the
	// schema's own.
	t.Run("the caller's search_path does not matter", func(t *testing.T) {
		registerJob(t, s, "j", "acme", 1, 4, 2)
		conn := pgtest.Connect(t, pgtest.DSN()) // no search_path to the schema at all
		for _, sql := range []string{
			"create temporary table jobs(job_id text, tenant text, targets jsonb, chunk_size int, next_index int)",
			"insert into pg_temp.jobs values ('j', 'evil', '[]', 1, 0)",
			"create temporary table orders(id int, tenant text, qty int, state text, revision int)",
			"set search_path = pg_temp, public",
		} {
			if _, err := conn.Exec(ctx, sql); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		fn := func(name string) string { return pgx.Identifier{s.Name, name}.Sanitize() }
		sameJSON(t, "run_chunk", pgtest.MustString(t, conn, "select "+fn("run_chunk")+"('j')::text"),
			`{"processed": [1, 2], "next_index": 2, "done": false}`)
		sameJSON(t, "inspect_job", pgtest.MustString(t, conn, "select "+fn("inspect_job")+"('j')::text"),
			`{"job_id": "j", "tenant": "acme", "targets": `+targets(1, 4)+`, "chunk_size": 2, "next_index": 2}`)
		sameJSON(t, "report", pgtest.MustString(t, conn, "select "+fn("report")+"('j')::text"),
			`{"approved": [1, 2, 3, 4], "committed": [1, 2], "remaining": [3, 4], "matching": [1, 2], "drifted": [], "missing": []}`)
		sameJSON(t, "cancel_chunk", pgtest.MustString(t, conn, "select "+fn("cancel_chunk")+"('acme', $1)::text", targets(3, 1)),
			`[{"id": 3, "previous_revision": 3, "new_revision": 4, "qty": 2}]`)
		if got := pgtest.MustString(t, conn, "select count(*)::text from pg_temp.orders"); got != "0" {
			t.Fatalf("temporary orders: %s rows", got)
		}
		if got := pgtest.MustString(t, conn, "select current_setting('search_path')"); got != "pg_temp, public" {
			t.Fatalf("search_path after the calls: %s", got)
		}
		sameJSON(t, "orders", ordersOf(t, s, 1, 4),
			`[[1, "acme", 2, "cancelled", 4], [2, "acme", 2, "cancelled", 4], [3, "acme", 2, "cancelled", 4], [4, "acme", 2, "pending", 3]]`)
	})
}

// explain is the verbose plan of sql.
func explain(t testing.TB, s *pgtest.Schema, sql string) string {
	t.Helper()
	rows, err := s.Conn.Query(ctx, "explain (verbose, costs off) "+sql)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
