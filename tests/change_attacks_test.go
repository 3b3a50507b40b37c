package tests

import (
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// attackSQL is the user's schema %[1]s of the probe of issue 35, owned by
// the application's role %[3]s (the writer %[4]s, chunks' owner %[5]s): a table whose code tries to take over the
// chunks install %[2]s whenever it runs, and records in loot, with whose
// rights it ran (current_user), whether each attempt worked. Each attempt
// is caught, so the chunk itself goes on. The attack runs from a
// BEFORE UPDATE trigger, a row security policy or the CHECK of the domain
// of the column the change sets.
const attackSQL = `
create table %[1]s.loot(vector text, who text, attempt text, ok boolean);
grant insert on %[1]s.loot to public;
create function %[1]s.attack(vector text) returns boolean language plpgsql set search_path = pg_catalog as $a$
begin
  begin
    execute 'grant select, insert, update, delete on %[2]s.change_audit, %[2]s.job_approval, %[2]s.jobs to %[3]s';
    insert into %[1]s.loot values (vector, current_user, 'grant', true);
  exception when others then
    insert into %[1]s.loot values (vector, current_user, 'grant', false);
  end;
  begin
    insert into %[2]s.job_approval (job_id, kind, tenant, chunk_size, targets_sha256, recorded_from)
    values ('forged', 'change', '7', 1, repeat('0', 64), 'register');
    insert into %[1]s.loot values (vector, current_user, 'forge', true);
  exception when others then
    insert into %[1]s.loot values (vector, current_user, 'forge', false);
  end;
  begin
    execute 'alter role %[3]s superuser';
    insert into %[1]s.loot values (vector, current_user, 'superuser', true);
  exception when others then
    insert into %[1]s.loot values (vector, current_user, 'superuser', false);
  end;
  return true;
end
$a$;
create domain %[1]s.tag as text check (value = 'old' or %[1]s.attack('domain check'));
create table %[1]s.t(id bigint primary key, m integer not null, v integer not null, tag %[1]s.tag);
insert into %[1]s.t select g, 7, 0, 'old' from generate_series(1, 4) g;
create function %[1]s.on_update() returns trigger language plpgsql set search_path = pg_catalog as $a$
begin
  perform %[1]s.attack('trigger');
  return new;
end
$a$;
create trigger before_update before update on %[1]s.t for each row execute function %[1]s.on_update();
alter table %[1]s.t enable row level security;
create policy everyone on %[1]s.t using (%[1]s.attack('policy'));
alter table %[1]s.t owner to %[3]s;
alter schema %[1]s owner to %[3]s;
alter function %[1]s.attack(text) owner to %[3]s;
alter function %[1]s.on_update() owner to %[3]s;
alter domain %[1]s.tag owner to %[3]s;
alter table %[1]s.loot owner to %[3]s;
grant usage on schema %[1]s to %[4]s, %[5]s;
grant select, update on %[1]s.t to %[4]s;`

// TestChangeCodeOnTheTableRunsAsTheWriter: the three attacks of issue 35's
// probe, a trigger, a policy function and a domain's CHECK function on the
// table of a declared change, each trying to grant the table's owner
// chunks' tables, to forge an approval and to make it a superuser, on an
// install owned by an ordinary role and on one owned by a superuser. The
// code runs (loot records it) as the writer at define, register, check,
// each chunk, report and undo; every attempt fails, and the table's owner
// gains nothing.
func TestChangeCodeOnTheTableRunsAsTheWriter(t *testing.T) {
	t.Parallel()
	for _, install := range []string{"ordinary owner", "superuser owner"} {
		t.Run(install, func(t *testing.T) {
			t.Parallel()
			var s *pgtest.Schema
			var owner, operator *pgx.Conn
			var ownerName string
			if install == "ordinary owner" {
				r := newRoles(t)
				s, owner, operator, ownerName = r.Schema, r.connect(t, r.owner), r.connect(t, r.operator), r.owner.Name
			} else {
				s = pgtest.NewSchema(t)
				owner, operator = s.Conn, s.Conn
				ownerName = pgtest.MustString(t, s.Conn, "select nspowner::regrole::text from pg_namespace where nspname = $1", s.Name)
				if !pgtest.MustBool(t, s.Conn, "select rolsuper from pg_roles where rolname = $1", ownerName) {
					t.Fatalf("the owner %s of %s is not a superuser", ownerName, s.Name)
				}
			}
			app := pgtest.NewRole(t, pgtest.DSN(), "app")
			w := writerOf(t, s)
			shop := pgtest.NewSchemaName(t)
			s.Exec(t, "create schema "+shop)
			t.Cleanup(func() {
				if _, err := s.Conn.Exec(ctx, "drop schema "+shop+" cascade"); err != nil {
					t.Errorf("drop schema %s: %v", shop, err)
				}
			})
			s.Exec(t, fmt.Sprintf(attackSQL, shop, s.Name, app.Name, w, ownerName))

			def := fmt.Sprintf(`{"name": "retag", "table": "%s.t", "key": "id", "tenant": "m", "version": "v", "set": {"tag": "new"}}`, shop)
			if !pgtest.MustBool(t, owner, "select define_change($1)", def) {
				t.Fatal("define_change: false")
			}
			plan := changePlan("a1", "7", `[{"id": 1, "v": 0}, {"id": 2, "v": 0}, {"id": 3, "v": 0}]`, 2)
			sameJSON(t, "check", pgtest.MustString(t, operator, "select (check_change('retag', $1) -> 'ok')::text", plan), "true")
			if !pgtest.MustBool(t, operator, "select register_change('retag', $1)", plan) {
				t.Fatal("register_change: false")
			}
			for _, want := range []string{`{"processed": [1, 2], "next_index": 2, "done": false}`, `{"processed": [3], "next_index": 3, "done": true}`} {
				sameJSON(t, "chunk", pgtest.MustString(t, operator, "select run_chunk('a1')::text"), want)
			}
			sameJSON(t, "report", pgtest.MustString(t, operator, "select (report('a1') -> 'matching')::text"), "[1, 2, 3]")
			sameJSON(t, "undo", pgtest.MustString(t, operator, "select (register_undo('a1') -> 'targets')::text"), "[1, 2, 3]")
			pgtest.MustString(t, operator, "select run_chunk('a1-undo')::text")
			pgtest.MustString(t, operator, "select run_chunk('a1-undo')::text")
			if got := pgtest.MustString(t, s.Conn, "select string_agg(id || ':' || tag || ':' || v, ' ' order by id) from "+shop+".t"); got != "1:old:2 2:old:2 3:old:2 4:old:0" {
				t.Fatalf("rows after the change and its undo: %s", got)
			}

			// The code ran, each vector at least once, always as the writer, and nothing worked.
			if got := pgtest.MustString(t, s.Conn, "select string_agg(distinct vector, ', ' order by vector) from "+shop+".loot"); got != "domain check, policy, trigger" {
				t.Errorf("vectors that ran: %s", got)
			}
			if got := pgtest.MustString(t, s.Conn, "select coalesce(string_agg(distinct who, ', '), 'none') from "+shop+".loot"); got != w {
				t.Errorf("the code on the table ran as %s, want only the writer %s", got, w)
			}
			if got := pgtest.MustString(t, s.Conn, "select coalesce(string_agg(vector || ' ' || attempt, ', ' order by vector, attempt), 'none') from (select distinct vector, attempt from "+shop+".loot where ok) as x"); got != "none" {
				t.Errorf("attempts that worked: %s", got)
			}
			if got := pgtest.MustString(t, s.Conn, "select count(*)::text from job_approval where job_id = 'forged'"); got != "0" {
				t.Errorf("forged approvals: %s", got)
			}
			if got := pgtest.MustString(t, s.Conn, `select (select rolsuper from pg_roles where rolname = $1)::text || ' '
			    || (has_table_privilege($1, 'change_audit', 'INSERT, UPDATE, DELETE, SELECT') or has_table_privilege($1, 'job_approval', 'INSERT, UPDATE, DELETE, SELECT')
			        or has_table_privilege($1, 'jobs', 'INSERT, UPDATE, DELETE, SELECT'))::text`, app.Name); got != "false false" {
				t.Errorf("the table's owner after the attacks: superuser, rights on chunks' tables = %s", got)
			}
			if got := pgtest.MustString(t, s.Conn, `select (has_schema_privilege($1, $2, 'USAGE') or has_schema_privilege($1, $2, 'CREATE'))::text`, w, s.Name); got != "false" {
				t.Errorf("the writer has a privilege on schema %s", s.Name)
			}
		})
	}
}

// TestTargetDomainsAreCheckedAsTheWriter: a target's values are typed
// and sorted by chunks' owner as their columns' base types, and only the
// writer casts them to the column's own type, so the CHECK of a domain on
// a key or an expect column (code the table's owner wrote) runs as the
// writer at register and at campaign create, never as chunks' owner (here
// a superuser, so an attack that ran as it would work). A bad value is
// still refused in the domain's words; a field whose column is of a
// composite type, whose input would run its parts' domains, is refused at
// define.
func TestTargetDomainsAreCheckedAsTheWriter(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	app := pgtest.NewRole(t, pgtest.DSN(), "app")
	w := writerOf(t, s)
	owner := pgtest.MustString(t, s.Conn, "select nspowner::regrole::text from pg_namespace where nspname = $1", s.Name)
	shop := pgtest.NewSchemaName(t)
	s.Exec(t, "create schema "+shop)
	t.Cleanup(func() {
		if _, err := s.Conn.Exec(ctx, "drop schema "+shop+" cascade"); err != nil {
			t.Errorf("drop schema %s: %v", shop, err)
		}
	})
	s.Exec(t, fmt.Sprintf(attackSQL, shop, s.Name, app.Name, w, owner))
	s.Exec(t, fmt.Sprintf(`create domain %[1]s.kid as bigint check (value > 0 and %[1]s.attack('key domain'));
	create domain %[1]s.amount as integer check (value >= 0 and %[1]s.attack('expect domain'));
	create type %[1]s.pair as (a %[1]s.amount, b integer);
	create table %[1]s.k(id %[1]s.kid primary key, m integer not null, v integer not null, due %[1]s.amount, p %[1]s.pair, state text not null);
	insert into %[1]s.k select g, 7, 0, g, null, 'open' from generate_series(1, 6) g;
	alter domain %[1]s.kid owner to %[2]s;
	alter domain %[1]s.amount owner to %[2]s;
	alter type %[1]s.pair owner to %[2]s;
	alter table %[1]s.k owner to %[2]s;
	grant select, update on %[1]s.k to %[3]s;`, shop, app.Name, w))
	s.Exec(t, "delete from "+shop+".loot") // (the rows above were inserted as chunks' owner, checks and all)

	_, err := pgtest.TryString(s.Conn, "select define_change($1)::text",
		fmt.Sprintf(`{"name": "pairs", "table": "%s.k", "key": "id", "expect": ["p"], "set": {"state": "closed"}}`, shop))
	pgtest.WantPgError(t, err, "22023", "expect: column "+shop+".k.p is "+shop+".pair; a field's column is of a base type, an enum, an array or a domain of one")

	s.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": "close_k", "table": "%s.k", "key": "id", "tenant": "m", "version": "v", "expect": ["due"], "set": {"state": "closed"}}`, shop))
	s.Exec(t, "select register_change('close_k', $1)", changePlan("k1", "7", `[{"id": 2, "v": 0, "due": 2}, {"id": 1, "v": 0, "due": 1}]`, 2))
	s.Exec(t, "select campaign_create_change('kc', 'close_k', '7', 2, $1, null, 16)",
		`[{"id": 5, "v": 0, "due": 5}, {"id": 3, "v": 0, "due": 3}, {"id": 4, "v": 0, "due": 4}]`)
	sameJSON(t, "k1's targets in key order", pgtest.MustString(t, s.Conn, "select job_targets('k1')::text"),
		`[{"id": 1, "v": 0, "due": 1}, {"id": 2, "v": 0, "due": 2}]`)
	sameJSON(t, "kc's targets in key order", pgtest.MustString(t, s.Conn, "select job_targets('kc-000001')::text"),
		`[{"id": 3, "v": 0, "due": 3}, {"id": 4, "v": 0, "due": 4}, {"id": 5, "v": 0, "due": 5}]`)
	_, err = pgtest.TryString(s.Conn, "select campaign_create_change('kd', 'close_k', '7', 2, $1, null, 16)::text", `[{"id": 6, "v": 0, "due": -1}]`)
	pgtest.WantPgError(t, err, "22023", "targets[0].due: -1 is not a value of column due ("+shop+".amount): value for domain "+shop+".amount violates check constraint \"amount_check\"")

	if got := pgtest.MustString(t, s.Conn, "select string_agg(distinct vector, ', ' order by vector) from "+shop+".loot"); got != "expect domain, key domain" {
		t.Errorf("vectors that ran: %s", got)
	}
	if got := pgtest.MustString(t, s.Conn, "select coalesce(string_agg(distinct who, ', '), 'none') from "+shop+".loot"); got != w {
		t.Errorf("the domains' checks ran as %s, want only the writer %s", got, w)
	}
	if got := pgtest.MustString(t, s.Conn, "select count(*) filter (where ok)::text from "+shop+".loot"); got != "0" {
		t.Errorf("attempts that worked: %s", got)
	}
}

// TestDefaultPrivilegesLeakNoExecute (issue 35, item 3): a default
// privilege of the role that defines a change and runs migrate
// (ALTER DEFAULT PRIVILEGES ... GRANT EXECUTE ON FUNCTIONS) opened the
// generated functions and chunks' helpers to another role, which could
// change an unapproved row with an audit row under any job. After define
// and after migrate, that role may execute none of them, and migrate says
// what it took back.
func TestDefaultPrivilegesLeakNoExecute(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	alice := pgtest.NewRole(t, pgtest.DSN(), "alice")
	shop := s.UserSchema(t, paymentsSQL)
	s.Exec(t, "alter default privileges in schema "+s.Name+" grant execute on functions to "+alice.Name)
	t.Cleanup(func() {
		if _, err := s.Conn.Exec(ctx, "alter default privileges in schema "+s.Name+" revoke execute on functions from "+alice.Name); err != nil {
			t.Errorf("alter default privileges: %v", err)
		}
	})
	s.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	leaked := `select coalesce(string_agg(p.oid::regprocedure::text, ', ' order by p.oid::regprocedure::text), 'none')
	  from pg_proc as p where p.pronamespace = $1::regnamespace and has_function_privilege($2, p.oid, 'EXECUTE')
	   and p.proname in ('apply_hold_payment', 'restore_hold_payment', 'preview_hold_payment', 'writer_exec', 'record_job', 'change_orders')`
	if got := pgtest.MustString(t, s.Conn, leaked, s.Name, alice.Name); got != "none" {
		t.Errorf("after define, %s may execute %s", alice.Name, got)
	}
	// A grant by hand on a helper, then migrate.
	s.Exec(t, "grant execute on function record_job(text, text, jsonb, integer, text, text, boolean) to "+alice.Name)
	conn, notices := noticedConn(t)
	if err := driver.Migrate(ctx, conn, s.Name, driver.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := pgtest.MustString(t, s.Conn, leaked, s.Name, alice.Name); got != "none" {
		t.Errorf("after migrate, %s may execute %s", alice.Name, got)
	}
	want := "chunks: took back EXECUTE on record_job(text,text,jsonb,integer,text,text,boolean), which only chunks' own functions call, from " + alice.Name
	if !slices.Contains(*notices, want) {
		t.Errorf("migrate's notices %q lack %q", *notices, want)
	}
}

// TestCheckShowsValuesOnlyToWhoMayReadThem (issue 35, item 19): an operator
// with no SELECT on the table learns through check (and a chunk's
// conflict) which column differs, never its value, and cannot tell a
// missing row from another tenant's; with SELECT on the columns, it reads
// both, as psql would show it.
func TestCheckShowsValuesOnlyToWhoMayReadThem(t *testing.T) {
	t.Parallel()
	r := newRoles(t)
	shop := r.Schema.UserSchema(t, paymentsSQL)
	p := shop + ".payments"
	r.Schema.Exec(t, "grant usage on schema "+shop+" to "+r.owner.Name)
	owner, op := r.connect(t, r.owner), r.connect(t, r.operator)
	pgtest.MustBool(t, owner, "select define_change($1)", pgtest.HoldPayment(shop))
	r.Schema.Exec(t, "update "+p+" set amount_cents = 999 where payment_id = 2")
	r.Schema.Exec(t, "update "+p+" set merchant_id = 8 where payment_id = 3")
	plan := changePlan("c1", "7", paymentTargets(2, 3, 9), 3)
	problems := "select string_agg(x ->> 'problem', ' | ' order by x ->> 'key') from jsonb_array_elements(check_change('hold_payment', $1) -> 'targets') as x"
	if got := pgtest.MustString(t, op, problems, plan); got != "payment_id 2: amount_cents is ? (you may not SELECT amount_cents), approved 200 | payment_id 3: not found in tenant 7 | payment_id 9: not found in tenant 7" {
		t.Errorf("check, no SELECT: %s", got)
	}
	r.Schema.Exec(t, "grant select (amount_cents, merchant_id) on "+p+" to "+r.operator.Name)
	if got := pgtest.MustString(t, op, problems, plan); got != "payment_id 2: amount_cents is 999, approved 200 | payment_id 3: belongs to another tenant | payment_id 9: missing" {
		t.Errorf("check, SELECT on the columns: %s", got)
	}
}

// TestMigrateWarnsOfCodeOnAForeignOrders: orders made by the application
// before chunks came stays its own; the built-in cancellation writes it
// with chunks' owner's rights, so migrate says that its owner may attach
// code to it, naming the trigger it has.
func TestMigrateWarnsOfCodeOnAForeignOrders(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	app := pgtest.NewRole(t, pgtest.DSN(), "app")
	name := pgtest.NewSchemaName(t)
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "drop schema if exists "+name+" cascade"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	for _, sql := range []string{
		"create schema " + name,
		"create table " + name + ".orders(id integer primary key, tenant text not null, qty integer not null, state text not null, revision integer not null)",
		"create function " + name + ".touch() returns trigger language plpgsql as 'begin return new; end'",
		"create trigger touched before update on " + name + ".orders for each row execute function " + name + ".touch()",
		"alter table " + name + ".orders owner to " + app.Name,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	conn, notices := noticedConn(t)
	if err := driver.Migrate(ctx, conn, name, driver.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "chunks: " + name + ".orders belongs to " + app.Name + ", not to the schema's owner, and the built-in cancellation writes it with the owner's rights: " +
		app.Name + " may attach code to it (a trigger, a policy) that would run with them; it has triggers touched"
	if !slices.Contains(*notices, want) {
		t.Errorf("migrate's notices %q lack %q", *notices, want)
	}
}

// noticedConn is a superuser's connection that keeps the message of every
// notice the server sends it.
func noticedConn(t *testing.T) (*pgx.Conn, *[]string) {
	t.Helper()
	var notices []string
	cfg, err := pgx.ParseConfig(pgtest.DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Message) }
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := conn.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return conn, &notices
}

// TestWriterServesOneOwner: code that the owner of a table attaches to it
// runs as the writer, so the writer may hold nothing on another owner's
// tables: a change of a table of app is refused while the writer also
// writes a table of another role, at define and at register (issue 35,
// item 1: "or any right its owner lacks").
func TestWriterServesOneOwner(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	app, other := pgtest.NewRole(t, pgtest.DSN(), "app"), pgtest.NewRole(t, pgtest.DSN(), "other")
	w := writerOf(t, s)
	shop := s.UserSchema(t, `create table %[1]s.t(id bigint primary key, v integer not null, s text);
	  create table %[1]s.theirs(id bigint primary key, s text);
	  insert into %[1]s.t select g, 0 from generate_series(1, 3) g`)
	s.Exec(t, "alter table "+shop+".t owner to "+app.Name)
	s.Exec(t, "alter table "+shop+".theirs owner to "+other.Name)
	s.Exec(t, "grant select, update on "+shop+".t to "+w)
	s.Exec(t, "grant update (s) on "+shop+".theirs to "+w)
	def := `{"name": "mark", "table": "` + shop + `.t", "key": "id", "version": "v", "set": {"s": "x"}}`
	refuse(t, s, "22023", "table: the writer "+w+" holds privileges on "+shop+".theirs (owned by "+other.Name+"); code on "+shop+".t (owned by "+app.Name+
		") would run with them: the writer serves the tables of one owner (revoke them, or give this install another writer: chunks migrate --writer ROLE)",
		"select define_change($1)", def)
	s.Exec(t, "revoke all on "+shop+".theirs from "+w)
	s.Exec(t, "select define_change($1)", def)
	s.Exec(t, "grant select on "+shop+".theirs to "+w)
	refuse(t, s, "CH409", "change mark: the writer "+w+" holds privileges on "+shop+".theirs (owned by "+other.Name+"), and code on "+shop+".t would run with them (chunks migrate names the problem)",
		"select register_change('mark', $1)", changePlan("m1", "t", `[{"id": 1, "v": 0}]`, 1))
}

// TestAlteredWriterFunctionRunsOnlyAsTheWriter: the writer owns the
// generated functions but cannot name them (it has no USAGE on chunks'
// schema), so code on the table cannot alter them; a superuser, or chunks'
// owner as a member of the writer, can. Made SECURITY INVOKER, a function
// would run as its caller, chunks' owner: its guard refuses. Any
// alteration (security, settings, grants) makes register and check
// refuse, naming it, until migrate makes the functions again; a chunk
// asks only the guard (docs/limits-and-decisions.md "What a chunk checks").
func TestAlteredWriterFunctionRunsOnlyAsTheWriter(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	writer := writerOf(t, s)
	s.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	s.Exec(t, "select register_change('hold_payment', $1)", changePlan("p1", "7", paymentTargets(1, 2), 1))
	admin := pgtest.Connect(t, pgtest.DSN())
	_, err := admin.Exec(ctx, "set role "+writer+"; alter function "+s.Name+".apply_hold_payment(text, text, integer, jsonb) security invoker")
	pgtest.WantPgError(t, err, "42501", "permission denied for schema "+s.Name)
	if _, err := admin.Exec(ctx, "reset role"); err != nil {
		t.Fatal(err)
	}
	asAdmin := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	apply := s.Name + ".apply_hold_payment(text, text, integer, jsonb)"

	asAdmin("alter function " + apply + " security invoker")
	_, err = pgtest.TryString(s.Conn, "select run_chunk('p1')::text")
	pgtest.WantPgError(t, err, "42501", "chunks: a function of the writer role "+writer+" runs only as that role; it was altered (chunks migrate makes it again) (p1)")
	if got := pgtest.MustString(t, s.Conn, "select count(*)::text from change_audit"); got != "0" {
		t.Errorf("audit rows after the refused chunk: %s", got)
	}
	altered := "change hold_payment: function apply_hold_payment(text,text,integer,jsonb) was altered (its security, settings or grants)"
	_, err = pgtest.TryString(s.Conn, "select register_change('hold_payment', $1)::text", changePlan("p2", "7", paymentTargets(3), 1))
	pgtest.WantPgError(t, err, "CH409", altered)

	// Its settings reset: register refuses, naming it.
	asAdmin("alter function " + apply + " security definer")
	asAdmin("alter function " + apply + " reset all")
	_, err = pgtest.TryString(s.Conn, "select register_change('hold_payment', $1)::text", changePlan("p2", "7", paymentTargets(3), 1))
	pgtest.WantPgError(t, err, "CH409", altered)
	_, err = pgtest.TryString(s.Conn, "select check_change('hold_payment', $1)::text", changePlan("p2", "7", paymentTargets(3), 1))
	pgtest.WantPgError(t, err, "CH409", altered)

	// migrate makes it again, as chunks made it.
	if err := driver.Migrate(ctx, admin, s.Name, driver.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := pgtest.MustString(t, s.Conn, "select p.prosecdef::text || ' ' || array_to_string(p.proconfig, '; ') from pg_proc as p where p.oid = $1::regprocedure", apply); got != "true search_path=pg_catalog, pg_temp; TimeZone=UTC; DateStyle=ISO, MDY; IntervalStyle=postgres; extra_float_digits=3; enable_seqscan=off; enable_bitmapscan=off; jit=off" {
		t.Errorf("the function after migrate: %s", got)
	}
	sameJSON(t, "chunk after migrate", pgtest.MustString(t, s.Conn, "select run_chunk('p1')::text"), `{"processed": [1], "next_index": 1, "done": false}`)
	s.Exec(t, "select register_change('hold_payment', $1)", changePlan("p2", "7", paymentTargets(3), 1))
}
