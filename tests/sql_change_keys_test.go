package tests

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Issue 36, item 2 at the SQL face: a key may be any unique key of the
// table. A composite key (tenant_id, order_no), whose first column is the
// tenant: targets carry each key column, are sorted and locked in the
// key's order, a duplicate is named by every column, and run, check,
// report and undo name a key as an object of its columns (its audit keeps
// the object's text); a conflict names each column.
func TestChangeCompositeKey(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	w := s.UserSchema(t, `create table %[1]s.torders(tenant_id integer not null, order_no integer not null, status text not null,
	  lock_version integer not null default 1, primary key (tenant_id, order_no));
	insert into %[1]s.torders(tenant_id, order_no, status) select t, n, 'open' from generate_series(1, 2) t, generate_series(1, 3) n;`)
	s.Exec(t, "select define_change($1)", `{"name": "close_order", "table": "`+w+`.torders", "key": ["tenant_id", "order_no"],
	  "tenant": "tenant_id", "version": "lock_version", "when": {"status": "open"}, "set": {"status": "closed"}}`)
	target := func(n int) string {
		return `{"tenant_id": 2, "order_no": ` + string(rune('0'+n)) + `, "lock_version": 1}`
	}

	_, err := pgtest.TryString(s.Conn, "select register_change('close_order', $1)::text", changePlan("dup", "2", "["+target(1)+", "+target(1)+"]", 2))
	pgtest.WantPgError(t, err, "22023", "targets: duplicate tenant_id 2, order_no 1")
	s.Exec(t, "select register_change('close_order', $1)", changePlan("c1", "2", "["+target(3)+", "+target(1)+", "+target(2)+"]", 2))
	sameJSON(t, "stored targets", pgtest.MustString(t, s.Conn, "select job_targets('c1')::text"), "["+target(1)+", "+target(2)+", "+target(3)+"]")
	sameJSON(t, "check", pgtest.MustString(t, s.Conn, "select jsonb_path_query_array(check_change('close_order', $1), '$.targets[*].key')::text",
		changePlan("c1", "2", "["+target(1)+"]", 2)), `[{"tenant_id": 2, "order_no": 1}]`)
	sameJSON(t, "chunk 1", pgtest.MustString(t, s.Conn, "select run_chunk('c1')::text"),
		`{"processed": [{"tenant_id": 2, "order_no": 1}, {"tenant_id": 2, "order_no": 2}], "next_index": 2, "done": false}`)
	// A row that no longer matches is named by every key column.
	s.Exec(t, "update "+w+".torders set status = 'held' where (tenant_id, order_no) = (2, 3)")
	_, err = pgtest.TryString(s.Conn, "select run_chunk('c1')::text")
	pgtest.WantPgError(t, err, "CH409", "tenant_id 2, order_no 3: status is held, the change requires open")
	s.Exec(t, "update "+w+".torders set status = 'open' where (tenant_id, order_no) = (2, 3)")
	sameJSON(t, "chunk 2", pgtest.MustString(t, s.Conn, "select run_chunk('c1')::text"),
		`{"processed": [{"tenant_id": 2, "order_no": 3}], "next_index": 3, "done": true}`)
	sameJSON(t, "audit keys", pgtest.MustString(t, s.Conn, "select jsonb_agg(key::jsonb order by ordinal)::text from change_audit where job_id = 'c1'"),
		`[{"tenant_id": 2, "order_no": 1}, {"tenant_id": 2, "order_no": 2}, {"tenant_id": 2, "order_no": 3}]`)
	sameJSON(t, "rows", pgtest.MustString(t, s.Conn, "select jsonb_agg(jsonb_build_array(tenant_id, order_no, status, lock_version) order by 1, 2)::text from "+w+".torders"),
		`[[1, 1, "open", 1], [1, 2, "open", 1], [1, 3, "open", 1], [2, 1, "closed", 2], [2, 2, "closed", 2], [2, 3, "closed", 2]]`)

	s.Exec(t, "delete from "+w+".torders where (tenant_id, order_no) = (2, 2)")
	s.Exec(t, "update "+w+".torders set status = 'reopened' where (tenant_id, order_no) = (2, 3)")
	o := func(n int) string { return `{"tenant_id": 2, "order_no": ` + string(rune('0'+n)) + `}` }
	sameJSON(t, "report", pgtest.MustString(t, s.Conn, "select report('c1')::text"),
		`{"approved": [`+o(1)+`, `+o(2)+`, `+o(3)+`], "committed": [`+o(1)+`, `+o(2)+`, `+o(3)+`], "remaining": [],
		  "matching": [`+o(1)+`], "drifted": [`+o(3)+`], "missing": [`+o(2)+`]}`)
	sameJSON(t, "undo", pgtest.MustString(t, s.Conn, "select register_undo('c1')::text"),
		`{"job_id": "c1-undo", "undoes": "c1", "created": true, "change": "close_order", "targets": [`+o(1)+`], "drifted": [`+o(3)+`], "missing": [`+o(2)+`]}`)
	s.Exec(t, "select run_chunk('c1-undo')")
	if got := pgtest.MustString(t, s.Conn, "select status || ' ' || lock_version from "+w+".torders where (tenant_id, order_no) = (2, 1)"); got != "open 3" {
		t.Fatalf("after the undo: %s", got)
	}
	// Another tenant's row is not found in this tenant.
	s.Exec(t, "select register_change('close_order', $1)", changePlan("c2", "2", `[{"tenant_id": 1, "order_no": 1, "lock_version": 1}]`, 1))
	_, err = pgtest.TryString(s.Conn, "select run_chunk('c2')::text")
	pgtest.WantPgError(t, err, "CH409", "tenant_id 1, order_no 1: belongs to another tenant")
	// Its unique key dropped, the key no longer names one row: register and every chunk refuse it.
	s.Exec(t, "select register_change('close_order', $1)", changePlan("c3", "1", `[{"tenant_id": 1, "order_no": 2, "lock_version": 1}]`, 1))
	s.Exec(t, "alter table "+w+".torders drop constraint torders_pkey")
	_, err = pgtest.TryString(s.Conn, "select run_chunk('c3')::text")
	pgtest.WantPgError(t, err, "CH409", "job c3: change close_order cannot run: key: columns (tenant_id, order_no) of "+w+
		".torders are no longer unique together (their unique index was dropped, or a column renamed)")
}

// The usual partitioned table: events partitioned by created_at with
// primary key (id, created_at). Rows of every partition are changed, each
// once, and undone.
func TestChangePartitionedTable(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	w := s.UserSchema(t, `create table %[1]s.events(id bigint not null, created_at timestamptz not null, status text not null,
	  primary key (id, created_at)) partition by range (created_at);
	create table %[1]s.events_2025 partition of %[1]s.events for values from ('2025-01-01') to ('2026-01-01');
	create table %[1]s.events_2026 partition of %[1]s.events for values from ('2026-01-01') to ('2027-01-01');
	insert into %[1]s.events values (1, '2025-06-01 10:00+00', 'new'), (2, '2026-06-01 10:00+00', 'new'), (3, '2025-07-01 10:00+00', 'new');`)
	s.Exec(t, "select define_change($1)", `{"name": "ack", "table": "`+w+`.events", "key": ["id", "created_at"], "expect": ["status"], "set": {"status": "acked"}}`)
	// Targets give created_at in any zone; they are stored as the writer prints them (UTC).
	s.Exec(t, "select register_change('ack', $1)", changePlan("e1", "t", `[{"id": 2, "created_at": "2026-06-01 12:00+02", "status": "new"},
	  {"id": 1, "created_at": "2025-06-01T10:00:00Z", "status": "new"}, {"id": 3, "created_at": "2025-07-01 10:00:00+00", "status": "new"}]`, 10))
	sameJSON(t, "chunk", pgtest.MustString(t, s.Conn, "select run_chunk('e1')::text"),
		`{"processed": [{"id": 1, "created_at": "2025-06-01T10:00:00+00:00"}, {"id": 2, "created_at": "2026-06-01T10:00:00+00:00"},
		  {"id": 3, "created_at": "2025-07-01T10:00:00+00:00"}], "next_index": 3, "done": true}`)
	if got := pgtest.MustString(t, s.Conn, "select string_agg(tableoid::regclass::text || ':' || id || ':' || status, ' ' order by id) from "+w+".events"); got !=
		w+".events_2025:1:acked "+w+".events_2026:2:acked "+w+".events_2025:3:acked" {
		t.Fatalf("events: %s", got)
	}
	if n := pgtest.MustInt(t, s.Conn, "select count(distinct key) from change_audit where job_id = 'e1'"); n != 3 {
		t.Fatalf("%d audit keys, want 3", n)
	}
	s.Exec(t, "select register_undo('e1')")
	s.Exec(t, "select run_chunk('e1-undo')")
	if got := pgtest.MustString(t, s.Conn, "select string_agg(status, ' ' order by id) from "+w+".events"); got != "new new new" {
		t.Fatalf("events after the undo: %s", got)
	}
}

// A citext key and a numeric key: any type with a default btree operator
// class. Keys equal by the type's own equality are one key (citext
// ignores case); a numeric key is a number in every list.
func TestChangeCitextAndNumericKeys(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	ext := s.UserSchema(t, `create extension if not exists citext schema %[1]s`)
	w := s.UserSchema(t, `create table %[1]s.users(email `+ext+`.citext primary key, active boolean not null);
	insert into %[1]s.users values ('Ann@Example.com', true), ('bob@example.com', true);
	create table %[1]s.lots(lot numeric(12, 2) primary key, state text not null);
	insert into %[1]s.lots values (10.50, 'open'), (11.25, 'open');`)
	// citext's = is compared with by name, in its schema: the writer must use it.
	deactivate := `{"name": "deactivate", "table": "` + w + `.users", "key": "email", "expect": ["active"], "set": {"active": false}}`
	writer := writerOf(t, s)
	s.Exec(t, "revoke usage on schema "+ext+" from "+writer)
	_, err := pgtest.TryString(s.Conn, "select define_change($1)::text", deactivate)
	pgtest.WantPgError(t, err, "22023", "table: the writer "+writer+" may not use schema "+ext+", where the operator "+ext+".=("+ext+".citext,"+ext+
		".citext) compares column email; its owner ("+pgtest.MustString(t, s.Conn, "select nspowner::regrole::text from pg_namespace where nspname = $1", ext)+
		") grants it: grant usage on schema "+ext+" to "+writer)
	s.Exec(t, "grant usage on schema "+ext+" to "+writer)
	s.Exec(t, "select define_change($1)", deactivate)
	_, err = pgtest.TryString(s.Conn, "select register_change('deactivate', $1)::text",
		changePlan("u0", "t", `[{"email": "ann@example.com", "active": true}, {"email": "ANN@EXAMPLE.COM", "active": true}]`, 2))
	pgtest.WantPgError(t, err, "22023", "targets: duplicate email ann@example.com")
	s.Exec(t, "select register_change('deactivate', $1)", changePlan("u1", "t", `[{"email": "BOB@example.com", "active": true}, {"email": "ann@example.com", "active": true}]`, 2))
	sameJSON(t, "users chunk", pgtest.MustString(t, s.Conn, "select run_chunk('u1')::text"),
		`{"processed": ["ann@example.com", "BOB@example.com"], "next_index": 2, "done": true}`)
	sameJSON(t, "users report", pgtest.MustString(t, s.Conn, "select report('u1') -> 'matching'"), `["ann@example.com", "BOB@example.com"]`)

	s.Exec(t, "select define_change($1)", `{"name": "close_lot", "table": "`+w+`.lots", "key": "lot", "expect": ["state"], "set": {"state": "closed"}}`)
	s.Exec(t, "select register_change('close_lot', $1)", changePlan("l1", "t", `[{"lot": 11.25, "state": "open"}, {"lot": 10.5, "state": "open"}]`, 2))
	sameJSON(t, "lots chunk", pgtest.MustString(t, s.Conn, "select run_chunk('l1')::text"), `{"processed": [10.50, 11.25], "next_index": 2, "done": true}`)
	sameJSON(t, "lots report", pgtest.MustString(t, s.Conn, "select report('l1')::text"),
		`{"approved": [10.50, 11.25], "committed": [10.50, 11.25], "remaining": [], "matching": [10.50, 11.25], "drifted": [], "missing": []}`)
	s.Exec(t, "select register_undo('l1')")
	s.Exec(t, "select run_chunk('l1-undo')")
	if got := pgtest.MustString(t, s.Conn, "select string_agg(state, ' ' order by lot) from "+w+".lots"); got != "open open" {
		t.Fatalf("lots after the undo: %s", got)
	}

	// Every compared column, not only the key, by its type's own equality:
	// a citext when (a constant and a list), expect and written column
	// match whatever their case, at the chunk, in check, report and undo.
	s.Exec(t, `create table `+w+`.tickets(id integer primary key, status `+ext+`.citext not null, tag `+ext+`.citext not null);
	  insert into `+w+`.tickets values (1, 'OPEN', 'Red'), (2, 'Pending', 'BLUE'), (3, 'held', 'red');
	  grant select, update on `+w+`.tickets to `+writer)
	s.Exec(t, "select define_change($1)", `{"name": "close_ticket", "table": "`+w+`.tickets", "key": "id", "expect": ["tag"],
	  "when": {"status": ["open", "pending"]}, "set": {"status": "closed"}}`)
	plan := changePlan("k1", "t", `[{"id": 1, "tag": "red"}, {"id": 2, "tag": "blue"}, {"id": 3, "tag": "RED"}]`, 3)
	sameJSON(t, "tickets check", pgtest.MustString(t, s.Conn, "select check_change('close_ticket', $1) -> 'targets'", plan),
		`[{"key": 1, "ok": true, "problem": "", "committed": false}, {"key": 2, "ok": true, "problem": "", "committed": false},
		  {"key": 3, "ok": false, "problem": "id 3: status is held, the change requires one of open, pending", "committed": false}]`)
	s.Exec(t, "update "+w+".tickets set status = 'Open' where id = 3")
	s.Exec(t, "select register_change('close_ticket', $1)", plan)
	sameJSON(t, "tickets chunk", pgtest.MustString(t, s.Conn, "select run_chunk('k1')::text"), `{"processed": [1, 2, 3], "next_index": 3, "done": true}`)
	s.Exec(t, "update "+w+".tickets set status = 'CLOSED', tag = 'RED' where id = 1") // the same values, by citext
	s.Exec(t, "update "+w+".tickets set tag = 'green' where id = 2")
	sameJSON(t, "tickets report", pgtest.MustString(t, s.Conn, "select report('k1')::text"),
		`{"approved": [1, 2, 3], "committed": [1, 2, 3], "remaining": [], "matching": [1, 3], "drifted": [2], "missing": []}`)
	sameJSON(t, "tickets undo", pgtest.MustString(t, s.Conn, "select (register_undo('k1') -> 'targets')::text"), `[1, 3]`)
	s.Exec(t, "select run_chunk('k1-undo')")
	if got := pgtest.MustString(t, s.Conn, "select string_agg(status::text, ' ' order by id) from "+w+".tickets"); got != "OPEN closed Open" {
		t.Fatalf("tickets after the undo: %s", got)
	}
}
