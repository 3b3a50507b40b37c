package tests

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
	chunkssql "github.com/chunks-dev/chunks/sql"
)

// docs/contract.md §2 and §6: driver.Migrate installs into one schema, idempotently,
// safely from many sessions at once, and creates nothing in public.

// ownSchema migrates a new schema through admin (a connection without
// search_path) and drops it when the test ends.
func ownSchema(t *testing.T, admin *pgx.Conn) *pgtest.Schema {
	t.Helper()
	name := pgtest.NewSchemaName(t)
	if err := driver.Migrate(ctx, admin, name, driver.MigrateOptions{}); err != nil {
		t.Fatalf("migrate %s: %v", name, err)
	}
	dropSchemaAtEnd(t, admin, name)
	dsn := pgtest.WithSearchPath(pgtest.DSN(), name)
	return &pgtest.Schema{Name: name, DSN: dsn, Conn: pgtest.Connect(t, dsn)}
}

// dropSchemaAtEnd drops schema name (if it exists) when the test ends; admin
// is closed after that, since it was opened before.
func dropSchemaAtEnd(t *testing.T, admin *pgx.Conn, name string) {
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "drop schema if exists "+pgx.Identifier{name}.Sanitize()+" cascade"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
}

// catalog is what Migrate installed in schema: every function with its oid,
// body, settings and comment, every relation with its oid and file, and tern's
// version.
func catalog(t testing.TB, conn *pgx.Conn, schema string) string {
	t.Helper()
	return pgtest.MustString(t, conn, `select jsonb_build_object(
	  'functions', (select jsonb_agg(jsonb_build_array(p.proname, p.oid, p.prosrc, p.proconfig, obj_description(p.oid, 'pg_proc'))
	                 order by p.proname, p.oid) from pg_proc p where p.pronamespace = $1::regnamespace),
	  'relations', (select jsonb_agg(jsonb_build_array(c.relname, c.oid, c.relfilenode, c.relkind) order by c.relname)
	                 from pg_class c where c.relnamespace = $1::regnamespace),
	  'version', (select jsonb_agg(v) from `+pgx.Identifier{schema, "schema_version"}.Sanitize()+` v))::text`, schema)
}

// publicObjects lists everything in public that Migrate could have created.
func publicObjects(t testing.TB, conn *pgx.Conn) string {
	t.Helper()
	return pgtest.MustString(t, conn, `select jsonb_build_object(
	  'class', (select count(*) from pg_class where relnamespace = 'public'::regnamespace),
	  'proc', (select count(*) from pg_proc where pronamespace = 'public'::regnamespace),
	  'type', (select count(*) from pg_type where typnamespace = 'public'::regnamespace),
	  'names', (select coalesce(jsonb_agg(relname order by relname), '[]') from pg_class where relnamespace = 'public'::regnamespace))::text`)
}

// shippedFunctions is the sorted names of the functions that the code package
// (sql/functions/*.sql) creates, the generated orders_preview and orders_undo_preview included.
func shippedFunctions(t testing.TB) []string {
	t.Helper()
	// The code package as migrate installs it: templates (tenant_call.sql)
	// write some of the functions.
	code, err := migrate.LoadCodePackage(chunkssql.Functions())
	if err != nil {
		t.Fatal(err)
	}
	text, err := code.Eval(map[string]any{"schema": "s"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	create := regexp.MustCompile(`(?i)create or replace function s\.([a-z0-9_]+)\(`)
	for _, m := range create.FindAllStringSubmatch(text, -1) {
		names = append(names, m[1])
	}
	// The generated code of the contract's cancellation, which every install
	// makes from orders_change() (install_orders_functions).
	names = append(names, "orders_preview", "orders_undo_preview")
	slices.Sort(names)
	for _, public := range []string{"cancel_chunk", "inspect_job", "register", "report", "run_chunk"} {
		if !slices.Contains(names, public) {
			t.Fatalf("the code package has no %s: %v", public, names)
		}
	}
	return names
}

// installedFunctions is the sorted names of the functions in schema.
func installedFunctions(t testing.TB, conn *pgx.Conn, schema string) []string {
	t.Helper()
	var names []string
	if err := conn.QueryRow(ctx, `select coalesce(array_agg(proname::text order by proname), '{}')
	  from pg_proc where pronamespace = $1::regnamespace`, schema).Scan(&names); err != nil {
		t.Fatal(err)
	}
	return names
}

func TestSQLMigrateAgainIsANoOp(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	s := ownSchema(t, admin)
	registerJob(t, s, "j", "acme", 1, 5, 2)
	s.Exec(t, "select run_chunk('j')")
	before, data := catalog(t, admin, s.Name), state(t, s)
	if !strings.Contains(before, fmt.Sprintf(`"version": [{"version": %d}]`, driver.SchemaVersion())) {
		t.Fatalf("version table: %s", before)
	}
	for i := 0; i < 2; i++ {
		if err := driver.Migrate(ctx, admin, s.Name, driver.MigrateOptions{}); err != nil {
			t.Fatalf("migrate again: %v", err)
		}
		if after := catalog(t, admin, s.Name); after != before {
			t.Fatalf("migrate again changed the catalog:\nbefore %s\n after %s", before, after)
		}
		unchanged(t, s, "migrate again", data)
	}
	// And the job goes on where it was.
	sameJSON(t, "run_chunk", pgtest.MustString(t, s.Conn, "select run_chunk('j')::text"), `{"processed": [3, 4], "next_index": 4, "done": false}`)
}

func TestSQLMigrateNothingInPublic(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	before := publicObjects(t, admin)
	s := ownSchema(t, admin)
	if err := driver.Migrate(ctx, admin, s.Name, driver.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if after := publicObjects(t, admin); after != before {
		t.Fatalf("migrate created something in public:\nbefore %s\n after %s", before, after)
	}
	if got := pgtest.MustString(t, admin, "select coalesce(to_regclass('public.schema_version')::text, 'none')"); got != "none" {
		t.Fatalf("public.schema_version: %s", got)
	}
	// Exactly the tables (with their indexes; job_queue is fleet mode's queue, job_kind says which jobs are undos) and
	// tern's version table, and the shipped functions.
	sameJSON(t, "tables", pgtest.MustString(t, admin, `select jsonb_agg(relname order by relname)::text from pg_class
	  where relnamespace = $1::regnamespace and relkind = 'r'`, s.Name), `["approval_policy", "campaign_jobs", "campaign_progress", "campaigns", "change_audit", "change_chunks", "change_jobs", "change_targets", "change_writer", "changes", "job_approval", "job_archive", "job_audit", "job_change", "job_ends", "job_kind", "job_progress", "job_queue", "job_skips", "jobs", "orders", "proposals", "schema_version", "workers"]`)
	if got, want := installedFunctions(t, admin, s.Name), shippedFunctions(t); !slices.Equal(got, want) {
		t.Fatalf("functions: %v, want %v", got, want)
	}
}

func TestSQLMigrateSchemasAreIndependent(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	s1, s2 := ownSchema(t, admin), ownSchema(t, admin)
	registerJob(t, s1, "j", "acme", 1, 4, 2)
	s1.Exec(t, "select run_chunk('j')")
	seedOrders(t, s2, "acme", 1, 4)
	data2 := state(t, s2)

	if got := pgtest.MustString(t, s2.Conn, "select inspect_job('j')::text"); got != "<null>" {
		t.Fatalf("inspect_job in the other schema: %s", got)
	}
	refuse(t, s2, "CH409", "job j: not found", "select run_chunk($1)::text", "j")
	refuse(t, s2, "CH409", "job j: not found", "select report($1)::text", "j")
	unchanged(t, s2, "the other schema's reads", data2)

	// Each schema's functions use their own tables, whatever the caller's search_path.
	sameJSON(t, "s1.inspect_job from s2's session", pgtest.MustString(t, s2.Conn,
		"select "+pgx.Identifier{s1.Name, "inspect_job"}.Sanitize()+"('j')::text"),
		`{"job_id": "j", "tenant": "acme", "targets": `+targets(1, 4)+`, "chunk_size": 2, "next_index": 2}`)
	if got := pgtest.MustString(t, admin, "select "+pgx.Identifier{s2.Name, "inspect_job"}.Sanitize()+"('j')::text"); got != "<null>" {
		t.Fatalf("s2.inspect_job from a session without search_path: %s", got)
	}

	// The same job id in the second schema is a new job there, with other content.
	if got := pgtest.MustString(t, s2.Conn, "select register($1)::text", plan("j", "acme", 1, 4, 4)); got != "true" {
		t.Fatalf("register in s2: %s", got)
	}
	sameJSON(t, "s2 run_chunk", pgtest.MustString(t, s2.Conn, "select run_chunk('j')::text"),
		`{"processed": [1, 2, 3, 4], "next_index": 4, "done": true}`)
	sameJSON(t, "s1 orders untouched by s2", ordersOf(t, s1, 1, 4),
		`[[1, "acme", 2, "cancelled", 4], [2, "acme", 2, "cancelled", 4], [3, "acme", 2, "pending", 3], [4, "acme", 2, "pending", 3]]`)
	sameJSON(t, "s1 job untouched by s2", pgtest.MustString(t, s1.Conn, "select inspect_job('j')::text"),
		`{"job_id": "j", "tenant": "acme", "targets": `+targets(1, 4)+`, "chunk_size": 2, "next_index": 2}`)
}

func TestSQLMigrateConcurrently(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	name := pgtest.NewSchemaName(t)
	dropSchemaAtEnd(t, admin, name)
	const n = 8
	conns := make([]*pgx.Conn, n)
	for i := range conns {
		conns[i] = pgtest.Connect(t, pgtest.DSN())
	}
	errs := make([]error, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i, conn := range conns {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			errs[i] = driver.Migrate(ctx, conn, name, driver.MigrateOptions{})
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migrate %d of %d: %v", i+1, n, err)
		}
	}
	if got, want := installedFunctions(t, admin, name), shippedFunctions(t); !slices.Equal(got, want) {
		t.Fatalf("functions: %v, want %v", got, want)
	}
	if got := pgtest.MustString(t, admin, "select jsonb_agg(v)::text from "+pgx.Identifier{name, "schema_version"}.Sanitize()+" v"); got != fmt.Sprintf(`[{"version": %d}]`, driver.SchemaVersion()) {
		t.Fatalf("version: %s", got)
	}
	dsn := pgtest.WithSearchPath(pgtest.DSN(), name)
	s := &pgtest.Schema{Name: name, DSN: dsn, Conn: pgtest.Connect(t, dsn)}
	registerJob(t, s, "j", "acme", 1, 3, 2)
	sameJSON(t, "run_chunk", pgtest.MustString(t, s.Conn, "select run_chunk('j')::text"), `{"processed": [1, 2], "next_index": 2, "done": false}`)
}

// An upgrade (here: undoing a hand edit) replaces function bodies and keeps
// the data, the oids and the tables.
func TestSQLMigrateRestoresShippedFunctions(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	s := ownSchema(t, admin)
	registerJob(t, s, "j", "acme", 1, 5, 2)
	s.Exec(t, "select run_chunk('j')")
	shipped, data := catalog(t, admin, s.Name), state(t, s)

	fn := func(name string) string { return pgx.Identifier{s.Name, name}.Sanitize() }
	for _, sql := range []string{
		"create or replace function " + fn("inspect_job") + `(job_id text) returns jsonb language sql as $$ select '"hand-made"'::jsonb $$`,
		"create or replace function " + fn("run_chunk") + `(job_id text) returns jsonb language plpgsql as $$ begin return '{}'; end $$`,
		"comment on function " + fn("report") + "(text) is 'hand-made'",
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if got := pgtest.MustString(t, s.Conn, "select inspect_job('j')::text"); got != `"hand-made"` {
		t.Fatalf("hand-made inspect_job: %s", got)
	}
	if err := driver.Migrate(ctx, admin, s.Name, driver.MigrateOptions{}); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if got := catalog(t, admin, s.Name); got != shipped {
		t.Fatalf("after migrate:\n got %s\nwant %s", got, shipped)
	}
	unchanged(t, s, "migrate", data)
	sameJSON(t, "inspect_job", pgtest.MustString(t, s.Conn, "select inspect_job('j')::text"),
		fmt.Sprintf(`{"job_id": "j", "tenant": "acme", "targets": %s, "chunk_size": 2, "next_index": 2}`, targets(1, 5)))
	sameJSON(t, "run_chunk", pgtest.MustString(t, s.Conn, "select run_chunk('j')::text"), `{"processed": [3, 4], "next_index": 4, "done": false}`)
}

// namespaceCatalog is every relation and function of schema name, by name,
// but the TOAST tables (and their indexes) that any table made anywhere
// adds to pg_toast, as the tests running in parallel do.
func namespaceCatalog(t testing.TB, conn *pgx.Conn, name string) string {
	t.Helper()
	return pgtest.MustString(t, conn, `select jsonb_build_object(
	  'relations', (select coalesce(jsonb_agg(c.relname order by c.relname), '[]') from pg_class c
	                 join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1
	                  and c.relname !~ '^pg_toast_[0-9]+(_index)?$'),
	  'functions', (select coalesce(jsonb_agg(p.proname order by p.proname), '[]') from pg_proc p
	                 join pg_namespace n on n.oid = p.pronamespace where n.nspname = $1))::text`, name)
}

// The schemas of the system are refused before anything is written, and
// nothing lands in them.
func TestSQLMigrateRefusesSystemSchemas(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	for _, name := range []string{"information_schema", "public", "pg_catalog", "pg_toast", "pg_chunks"} {
		t.Run(name, func(t *testing.T) {
			before := namespaceCatalog(t, admin, name)
			err := driver.Migrate(ctx, admin, name, driver.MigrateOptions{})
			if !errors.Is(err, driver.ErrInvalid) || !strings.Contains(err.Error(), "schema: "+name+" belongs to the system") {
				t.Fatalf("migrate %s: %v, want ErrInvalid saying it belongs to the system", name, err)
			}
			if after := namespaceCatalog(t, admin, name); after != before {
				t.Fatalf("migrate %s changed it:\nbefore %s\n after %s", name, before, after)
			}
			if st := admin.PgConn().TxStatus(); st != 'I' {
				t.Fatalf("transaction status %c after the refusal, want I", st)
			}
		})
	}
}

// Every keyword the server reserves (pg_get_keywords categories R and T,
// the ones that cannot qualify a name unquoted) is refused as a schema
// before any connection is used; the other keywords are plain names, and a
// schema named after one installs and works.
func TestSQLMigrateKeywordSchemas(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	rows, _ := admin.Query(ctx, "select word, catcode::text from pg_get_keywords() order by word")
	type keyword struct{ Word, Category string }
	keywords, err := pgx.CollectRows(rows, pgx.RowToStructByPos[keyword])
	if err != nil {
		t.Fatal(err)
	}
	var reserved, unreserved []string
	for _, k := range keywords {
		err := driver.CheckSchema(k.Word)
		switch k.Category {
		case "R", "T":
			reserved = append(reserved, k.Word)
			if !errors.Is(err, driver.ErrInvalid) || err.Error() != "invalid: schema: "+k.Word+" is a reserved SQL keyword; choose another name" {
				t.Errorf("CheckSchema(%q), a keyword of category %s: %v", k.Word, k.Category, err)
			}
		default:
			unreserved = append(unreserved, k.Word)
			if err != nil {
				t.Errorf("CheckSchema(%q), a keyword of category %s: %v", k.Word, k.Category, err)
			}
		}
	}
	if len(reserved) < 90 || len(unreserved) < 300 {
		t.Fatalf("%d reserved and %d other keywords: the server's list looks wrong", len(reserved), len(unreserved))
	}
	for _, name := range []string{"select", "user", "left"} {
		if err := driver.Migrate(ctx, admin, name, driver.MigrateOptions{}); !errors.Is(err, driver.ErrInvalid) {
			t.Fatalf("migrate %s: %v, want ErrInvalid", name, err)
		}
		if got := pgtest.MustString(t, admin, "select count(*)::text from pg_namespace where nspname = $1", name); got != "0" {
			t.Fatalf("migrate %s left a schema %s behind", name, name)
		}
	}
	// One keyword of each other category: "between" (C, a column name
	// keyword) and "abort" (U, unreserved) are ordinary schema names.
	for _, name := range []string{"between", "abort"} {
		if !slices.Contains(unreserved, name) {
			t.Fatalf("%s is not an unreserved keyword on this server", name)
		}
		dropSchemaAtEnd(t, admin, name)
		if err := driver.Migrate(ctx, admin, name, driver.MigrateOptions{}); err != nil {
			t.Fatalf("migrate %s: %v", name, err)
		}
		conn := pgtest.Connect(t, pgtest.WithSearchPath(pgtest.DSN(), name))
		s := &pgtest.Schema{Name: name, Conn: conn}
		registerJob(t, s, "j", "acme", 1, 3, 2)
		sameJSON(t, name+".run_chunk", pgtest.MustString(t, conn, "select run_chunk('j')::text"),
			`{"processed": [1, 2], "next_index": 2, "done": false}`)
	}
}

// Migrate is one transaction: when its last step fails (here a function
// of the same name with another result type is in the way), the tables,
// tern's version table and every function it had created are gone again.
func TestSQLMigrateFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	name := pgtest.NewSchemaName(t)
	dropSchemaAtEnd(t, admin, name)
	if _, err := admin.Exec(ctx, "create schema "+name+"; create function "+name+
		".queue_channel() returns integer language sql as 'select 1'"); err != nil {
		t.Fatal(err)
	}
	before := namespaceCatalog(t, admin, name)
	err := driver.Migrate(ctx, admin, name, driver.MigrateOptions{})
	if err == nil || !strings.Contains(err.Error(), "cannot change return type of existing function") {
		t.Fatalf("migrate over a conflicting function: %v", err)
	}
	if after := namespaceCatalog(t, admin, name); after != before || after != `{"functions": ["queue_channel"], "relations": []}` {
		t.Fatalf("the failed migrate left something behind:\nbefore %s\n after %s", before, after)
	}
	if st := admin.PgConn().TxStatus(); st != 'I' {
		t.Fatalf("transaction status %c after the failure, want I", st)
	}
	// The connection is usable, and once the obstacle is gone migrate installs.
	if _, err := admin.Exec(ctx, "drop function "+name+".queue_channel()"); err != nil {
		t.Fatal(err)
	}
	if err := driver.Migrate(ctx, admin, name, driver.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := installedFunctions(t, admin, name), shippedFunctions(t); !slices.Equal(got, want) {
		t.Fatalf("functions: %v, want %v", got, want)
	}
}

// A migrate on a running fleet waits for the worker's pass in flight and
// holds new passes until it commits, so that no pass runs half old code and
// half new: a pass in flight when a migrate dropped a helper it had yet to
// call failed with 42883, and its job was paused (seen in the upgrade tests,
// from a build whose run_change_chunk had another signature).
func TestSQLMigrateWaitsForThePassInFlight(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	// A declared change's chunk of 3 rows takes 3 s: a trigger of the
	// application on its table sleeps 1 s a row. Nothing a migrate touches is locked by it but chunks' own
	// rows, which a migrate alone never waits for.
	shop := s.UserSchema(t, `create table %[1]s.tickets(id bigint primary key, status text not null, lock_version integer not null);
	  insert into %[1]s.tickets select g, 'open', 0 from generate_series(1, 6) g;
	  create function %[1]s.slow() returns trigger language plpgsql as $$ begin perform pg_sleep(1); return new; end $$;
	  create trigger slow before update on %[1]s.tickets for each row execute function %[1]s.slow()`)
	s.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": "close", "table": "%s.tickets", "key": "id", "version": "lock_version",
	  "when": {"status": "open"}, "set": {"status": "closed"}}`, shop))
	s.Exec(t, `select register_change('close', '{"job_id": "j", "tenant": "t", "chunk_size": 3, "allow_partial": true,
	  "targets": [{"id": 1, "lock_version": 0}, {"id": 2, "lock_version": 0}, {"id": 3, "lock_version": 0},
	              {"id": 4, "lock_version": 0}, {"id": 5, "lock_version": 0}, {"id": 6, "lock_version": 0}]}')`)
	chunk := pgtest.Connect(t, s.DSN)
	type ended struct {
		at  time.Time
		err error
	}
	chunkEnded := make(chan ended, 1)
	go func() {
		_, err := chunk.Exec(ctx, "select run_next_chunk('w1')") // a worker's pass, as the fleet runs it
		chunkEnded <- ended{time.Now(), err}
	}()
	pgtest.WaitFor(t, 10*time.Second, "the chunk in flight", func() bool {
		return pgtest.MustBool(t, s.Conn, "select exists (select from pg_stat_activity where wait_event = 'PgSleep')")
	})
	admin := pgtest.Connect(t, pgtest.DSN())
	if err := driver.Migrate(ctx, admin, s.Name, driver.MigrateOptions{}); err != nil {
		t.Fatalf("migrate beside a chunk in flight: %v", err)
	}
	migrated := time.Now()
	c := <-chunkEnded
	if c.err != nil {
		t.Fatalf("the pass in flight: %v", c.err)
	}
	if migrated.Before(c.at) {
		t.Errorf("migrate committed %v before the pass in flight ended; want it to wait for the pass", c.at.Sub(migrated))
	}
	if got := queryString(t, s, "select next_index || ' ' || paused from jobs join job_queue using (job_id) where job_id = 'j'"); got != "3 false" {
		t.Errorf("next_index and paused after the pass: %s", got)
	}
}
