package tests

import (
	"slices"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// edgesSQL is a user's schema for the edges of issue 35: t with a NOT NULL
// domain column the change does not touch, a numeric(5,2), a timestamptz,
// a column named like a variable of the generated code (v_done) and a
// smallint version; kid inherits from parent.
const edgesSQL = `
create domain %[1]s.nn as text not null;
create table %[1]s.t(id bigint primary key, m integer not null, v smallint not null, n %[1]s.nn default 'x',
  amt numeric(5,2) not null default 0, at timestamptz, v_done text);
insert into %[1]s.t (id, m, v) select g, 7, 0 from generate_series(1, 4) g;
update %[1]s.t set v = 32767 where id = 4;
create table %[1]s.parent(id bigint primary key, s text);
create table %[1]s.kid() inherits (%[1]s.parent);`

// TestChangeEdges: what a definition means does not move with the
// session or the catalog (issue 35, items 5 to 8 and 10 to 13).
func TestChangeEdges(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, edgesSQL)
	def := func(name, extra string) string {
		return `{"name": "` + name + `", "table": "` + shop + `.t", "key": "id", "tenant": "m", "version": "v", ` + extra + `}`
	}

	// Item 5: the tables of another install; item 10: inheritance children.
	other := pgtest.NewSchema(t)
	refuse(t, s, "22023", "table: "+other.Name+".jobs is in schema "+other.Name+", where chunks is installed: declare changes of your own tables",
		"select define_change($1)", `{"name": "steal", "table": "`+other.Name+`.jobs", "key": "job_id", "expect": ["tenant"], "set": {"chunk_size": 1}}`)
	refuse(t, s, "22023", "table: table "+shop+".parent has inheritance children ("+shop+".kid): its key is unique in it alone, not in them",
		"select define_change($1)", `{"name": "p", "table": "`+shop+`.parent", "key": "id", "expect": ["s"], "set": {"s": "y"}}`)

	// Item 8: no word relative to the day; item 12: the typmod, exactly.
	refuse(t, s, "22023", `set.at: constant "today 12:00" is relative to the day it is read; give the date or time itself, or name the column in set_now`,
		"select define_change($1)", def("d", `"set": {"at": "today 12:00"}`))
	refuse(t, s, "22023", `set.amt: constant 1.005 would be stored as 1.01 in column `+shop+`.t.amt (numeric(5,2)) (rounded or cut); give the value exactly`,
		"select define_change($1)", def("d", `"set": {"amt": 1.005}`))
	nothingDefined(t, s)

	// Item 8: a constant date and time mean the same in every session.
	s.Exec(t, "set timezone = 'Pacific/Kiritimati'")
	s.Exec(t, "set datestyle = 'ISO, DMY'")
	s.Exec(t, "select define_change($1)", def("stamp", `"set": {"at": "2024-06-01 12:00", "v_done": "yes"}, "set_from_target": {"amt": "amount"}`))
	refuse(t, s, "22023", "targets[0].amount: 1.005 would be stored as 1.01 in column amt (numeric(5,2)) (rounded or cut); give the value exactly",
		"select register_change('stamp', $1)", changePlan("e0", "7", `[{"id": 1, "v": 0, "amount": 1.005}]`, 2))
	refuse(t, s, "22023", "targets[0].v: 32767 is the largest value column v (smallint) holds, and a change adds 1 to the version",
		"select register_change('stamp', $1)", changePlan("e0", "7", `[{"id": 4, "v": 32767, "amount": 1}]`, 2))
	s.Exec(t, "select register_change('stamp', $1)", changePlan("e1", "7", `[{"id": 1, "v": 0, "amount": 12.5}, {"id": 2, "v": 0, "amount": 20}]`, 2))
	// Item 13: a column named v_done, written by the change.
	sameJSON(t, "chunk", pgtest.MustString(t, s.Conn, "select run_chunk('e1')::text"), `{"processed": [1, 2], "next_index": 2, "done": true}`)
	if got := pgtest.MustString(t, s.Conn, "select string_agg(id || ' ' || (at at time zone 'UTC')::text || ' ' || amt || ' ' || v_done, ', ' order by id) from "+shop+".t where id <= 2"); got != "1 2024-06-01 12:00:00 12.50 yes, 2 2024-06-01 12:00:00 20.00 yes" {
		t.Errorf("rows after the chunk: %s", got)
	}
	s.Exec(t, "set timezone = 'UTC'")
	s.Exec(t, "set datestyle = 'ISO, MDY'")
	sameJSON(t, "report in another session's zone", pgtest.MustString(t, s.Conn, "select (report('e1') -> 'matching')::text"), "[1, 2]")
	// Item 11: the undo of a table with a NOT NULL domain column it does not touch.
	s.Exec(t, "set timezone = 'America/Los_Angeles'")
	sameJSON(t, "undo", pgtest.MustString(t, s.Conn, "select (register_undo('e1') -> 'targets')::text"), "[1, 2]")
	sameJSON(t, "undo chunk", pgtest.MustString(t, s.Conn, "select run_chunk('e1-undo')::text"), `{"processed": [1, 2], "next_index": 2, "done": true}`)
	if got := pgtest.MustString(t, s.Conn, "select string_agg(id || ' ' || coalesce(at::text, 'null') || ' ' || amt || ' ' || coalesce(v_done, 'null') || ' ' || v, ', ' order by id) from "+shop+".t where id <= 2"); got != "1 null 0.00 null 2, 2 null 0.00 null 2" {
		t.Errorf("rows after the undo: %s", got)
	}
	s.Exec(t, "reset timezone")

	// Item 6: a renamed column is never silently dropped from the change;
	// item 7: a table gone does not fail migrate for the rest.
	s.Exec(t, "select register_change('stamp', $1)", changePlan("e2", "7", `[{"id": 3, "v": 0, "amount": 1}]`, 2))
	s.Exec(t, "alter table "+shop+".t rename column v_done to v_renamed")
	s.Exec(t, "create table "+shop+".gone(id bigint primary key, s text)")
	s.Exec(t, "grant select, update on "+shop+".gone to "+writerOf(t, s))
	s.Exec(t, "select define_change($1)", `{"name": "gone", "table": "`+shop+`.gone", "key": "id", "expect": ["s"], "set": {"s": "y"}}`)
	s.Exec(t, "drop table "+shop+".gone")
	admin, notices := noticedConn(t)
	if err := driver.Migrate(ctx, admin, s.Name, driver.MigrateOptions{}); err != nil {
		t.Fatalf("migrate with a change whose column was renamed and one whose table was dropped: %v", err)
	}
	for _, want := range []string{
		"chunks: change gone no longer fits its table, so it has no function and its jobs are refused until it is fixed (chunks change show gone): change gone: table " + shop + ".gone no longer exists",
		"chunks: change stamp no longer fits its table, so it has no function and its jobs are refused until it is fixed (chunks change show stamp): change stamp: table " + shop + ".t has no column v_done (renamed or dropped since the change was defined)",
	} {
		if !slices.Contains(*notices, want) {
			t.Errorf("migrate's notices %q lack %q", *notices, want)
		}
	}
	_, err := pgtest.TryString(s.Conn, "select run_chunk('e2')::text")
	pgtest.WantPgError(t, err, "CH409", "job e2: change stamp cannot run: function "+s.Name+".apply_stamp(text, text, integer, jsonb) is gone")
	s.Exec(t, "alter table "+shop+".t rename column v_renamed to v_done")
	if err := driver.Migrate(ctx, admin, s.Name, driver.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "chunk after the column came back", pgtest.MustString(t, s.Conn, "select run_chunk('e2')::text"), `{"processed": [3], "next_index": 1, "done": true}`)

	// Item 10: the key's unique index dropped after the approval.
	s.Exec(t, "select register_change('stamp', $1)", changePlan("e3", "7", `[{"id": 1, "v": 2, "amount": 1}]`, 2))
	s.Exec(t, "alter table "+shop+".t drop constraint t_pkey")
	_, err = pgtest.TryString(s.Conn, "select run_chunk('e3')::text")
	pgtest.WantPgError(t, err, "CH409", "job e3: change stamp cannot run: key: column "+shop+".t.id is no longer unique on its own (its unique index was dropped, or the column renamed)")
	_, err = pgtest.TryString(s.Conn, "select register_change('stamp', $1)::text", changePlan("e4", "7", `[{"id": 2, "v": 2, "amount": 1}]`, 2))
	pgtest.WantPgError(t, err, "CH409", "change stamp: key: column "+shop+".t.id is no longer unique on its own (its unique index was dropped, or the column renamed)")

	// Item 2: a temporary table never stands in for the one a trigger reads.
	s.Exec(t, "alter table "+shop+".t add primary key (id)")
	s.Exec(t, "create temp table limits(n integer)")
	_, err = pgtest.TryString(s.Conn, "select run_chunk('e3')::text")
	pgtest.WantPgError(t, err, "CH409", "job e3: change stamp cannot run: this session has temporary objects (limits); code on the table (a trigger, a policy) could read them instead of the tables it means, so run chunks from a session without any (DISCARD TEMP)")
	s.Exec(t, "discard temp")
	sameJSON(t, "chunk without temporary objects", pgtest.MustString(t, s.Conn, "select run_chunk('e3')::text"), `{"processed": [1], "next_index": 1, "done": true}`)
}

// TestChangeCodeEdges: what code on the table can make a chunk do, and
// what define says of it (issue 35, items 2, 13 and 16).
func TestChangeCodeEdges(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, `create table %[1]s.t(id bigint primary key, v integer not null, s text, "?ordinal" integer);
	  insert into %[1]s.t (id, v) select g, 0 from generate_series(1, 3) g;
	  create function %[1]s.skip_two() returns trigger language plpgsql as $f$
	  begin
	    if new.id = 2 then return null; end if;
	    return new;
	  end $f$;
	  create trigger skip_two before update on %[1]s.t for each row execute function %[1]s.skip_two();`)
	// Item 13: a column named like the generated code's own.
	refuse(t, s, "22023", `expect: column "?ordinal" starts with ?, which chunks keeps for the columns of its generated code; rename it`,
		"select define_change($1)", `{"name": "q", "table": "`+shop+`.t", "key": "id", "version": "v", "expect": ["?ordinal"], "set": {"s": "x"}}`)
	// Item 2: define names the trigger function that pins no search_path.
	conn, notices := noticedConn(t)
	if _, err := conn.Exec(ctx, "select "+s.Name+".define_change($1)", `{"name": "mark", "table": "`+shop+`.t", "key": "id", "version": "v", "set": {"s": "x"}}`); err != nil {
		t.Fatal(err)
	}
	want := "chunks: " + shop + ".t runs " + shop + ".skip_two(), which has no search_path of its own: they run as the writer with search_path pg_catalog, pg_temp (ALTER FUNCTION ... SET search_path = ...)"
	if !slices.Contains(*notices, want) {
		t.Errorf("define's notices %q lack %q", *notices, want)
	}
	// Item 16: a row that a trigger skips is named, not "changed 0 of 1 rows".
	s.Exec(t, "select register_change('mark', $1)", changePlan("m1", "t", `[{"id": 1, "v": 0}, {"id": 2, "v": 0}, {"id": 3, "v": 0}]`, 3))
	_, err := pgtest.TryString(s.Conn, "select run_chunk('m1')::text")
	pgtest.WantPgError(t, err, "CH409", "id 2: the row matches but the update did not change it (a trigger on the table skipped it, or a row security policy hides it from the writer "+writerOf(t, s)+")")
	if got := pgtest.MustString(t, s.Conn, "select count(*)::text from "+shop+".t where s is not null"); got != "0" {
		t.Errorf("%s rows changed by the refused chunk", got)
	}
}

// TestReportOfJSONColumns: a chunk and report judge json and jsonb
// columns by their values, whatever JSON they hold (an object, a string):
// json, which has no equality operator, is compared as jsonb (key order
// aside), and the facts of a written or expect jsonb column reach the
// writer as JSON, never as text to parse again, so a jsonb string is not
// taken for invalid JSON. A change by hand of one of them drifts that row
// only.
func TestReportOfJSONColumns(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, `create table %[1]s.docs(id bigint primary key, v integer not null, tags jsonb, meta json, doc jsonb, note json);
	insert into %[1]s.docs values (1, 0, '{"x": 1}', '{"b": 2, "a": 1}', null, null), (2, 0, '"a string"', '"m"', null, null), (3, 0, '[1, 2]', null, null, null);`)
	s.Exec(t, "select define_change($1)", `{"name": "redoc", "table": "`+shop+`.docs", "key": "id", "version": "v", "expect": ["tags", "meta"],
	  "set_from_target": {"doc": "doc", "note": "note"}}`)
	s.Exec(t, "select register_change('redoc', $1)", changePlan("d1", "t", `[
	  {"id": 1, "v": 0, "tags": "{\"x\": 1}", "meta": "{\"a\": 1, \"b\": 2}", "doc": "\"hello\"", "note": "{\"n\": 1}"},
	  {"id": 2, "v": 0, "tags": "\"a string\"", "meta": "\"m\"", "doc": "{\"k\": [1, 2]}", "note": "\"plain\""},
	  {"id": 3, "v": 0, "tags": "[1, 2]", "meta": null, "doc": "null", "note": "[]"}]`, 3))
	sameJSON(t, "chunk", pgtest.MustString(t, s.Conn, "select run_chunk('d1')::text"), `{"processed": [1, 2, 3], "next_index": 3, "done": true}`)
	sameJSON(t, "report", pgtest.MustString(t, s.Conn, "select jsonb_build_array(r -> 'matching', r -> 'drifted')::text from report('d1') as r"),
		`[[1, 2, 3], []]`)
	s.Exec(t, "update "+shop+".docs set doc = '\"hello!\"' where id = 1")
	sameJSON(t, "report after a change by hand", pgtest.MustString(t, s.Conn, "select jsonb_build_array(r -> 'matching', r -> 'drifted')::text from report('d1') as r"),
		`[[2, 3], [1]]`)
	sameJSON(t, "verify", pgtest.MustString(t, s.Conn, "select (verify_job('d1') -> 'sound')::text"), `true`)
}
