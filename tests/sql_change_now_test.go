package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// voidInvoice sets two columns to the chunk's time (set_now) on rows whose
// status is one of two (a when list) and whose voided_at is NULL.
func voidInvoice(bill string) string {
	return fmt.Sprintf(`{"name": "void_invoice", "table": "%s.invoices", "key": "id", "expect": ["total"],
	  "when": {"status": ["pending", "authorized"], "voided_at": null},
	  "set": {"status": "void"}, "set_now": ["voided_at", "updated_at", "voided_on"]}`, bill)
}

const invoicesSQL = `
create table %[1]s.invoices(id bigint primary key, status text not null, total integer not null,
  voided_at timestamptz, updated_at timestamp not null default '2020-01-01 00:00', voided_on date);
insert into %[1]s.invoices(id, status, total) values (1, 'pending', 10), (2, 'authorized', 20), (3, 'shipped', 30), (4, 'pending', 40);
update %[1]s.invoices set voided_at = '2021-02-03 04:05:06+00' where id = 4;`

// Issue 36, item 7: set_now writes the chunk's transaction time (the same
// in every column and row of a chunk, in UTC for timestamp and date), the
// audit keeps the value written, report compares with it and undo puts
// the old value back; in when, a list is IN and null is IS NULL, and a row
// that fails either is named with what the change requires.
func TestChangeSetNowAndWhenLists(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	bill := s.UserSchema(t, invoicesSQL)
	if !pgtest.MustBool(t, s.Conn, "select define_change($1)", voidInvoice(bill)) {
		t.Fatal("define_change: false for a new change")
	}
	targets := `[{"id": 1, "total": 10}, {"id": 2, "total": 20}]`
	s.Exec(t, "select register_change('void_invoice', $1)", changePlan("v1", "t", targets, 2))
	s.Exec(t, "set timezone = 'Pacific/Kiritimati'") // the session's zone is not the writer's
	s.Exec(t, "begin")
	txTime := pgtest.MustString(t, s.Conn, "select to_char(now() at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')")
	sameJSON(t, "chunk", pgtest.MustString(t, s.Conn, "select run_chunk('v1')::text"), `{"processed": [1, 2], "next_index": 2, "done": true}`)
	s.Exec(t, "commit")
	txDay, _ := time.Parse("2006-01-02 15:04:05.999999", txTime)
	sameJSON(t, "invoices", pgtest.MustString(t, s.Conn, fmt.Sprintf(`select jsonb_agg(jsonb_build_array(id, status,
	    to_char(voided_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), to_char(updated_at, 'YYYY-MM-DD HH24:MI:SS.US'), voided_on) order by id)::text
	  from %s.invoices`, bill)),
		fmt.Sprintf(`[[1, "void", %[1]q, %[1]q, %[2]q], [2, "void", %[1]q, %[1]q, %[2]q],
		  [3, "shipped", null, "2020-01-01 00:00:00.000000", null], [4, "pending", "2021-02-03 04:05:06.000000", "2020-01-01 00:00:00.000000", null]]`,
			txTime, txDay.Format("2006-01-02")))
	// The audit keeps each value written as the writer wrote it (UTC).
	sameJSON(t, "audit", pgtest.MustString(t, s.Conn, `select jsonb_agg(jsonb_build_array(key, before, after - 'voided_at' - 'updated_at') order by ordinal)::text from change_audit where job_id = 'v1'`),
		fmt.Sprintf(`[["1", {"status": "pending", "voided_at": null, "updated_at": "2020-01-01T00:00:00", "voided_on": null}, {"status": "void", "voided_on": %[1]q}],
		  ["2", {"status": "authorized", "voided_at": null, "updated_at": "2020-01-01T00:00:00", "voided_on": null}, {"status": "void", "voided_on": %[1]q}]]`,
			txDay.Format("2006-01-02")))
	if n := pgtest.MustInt(t, s.Conn, `select count(*) from change_audit as a join `+bill+`.invoices as i on i.id::text = a.key
	    where a.job_id = 'v1' and (a.after ->> 'voided_at')::timestamptz = i.voided_at and (a.after ->> 'updated_at')::timestamp = i.updated_at`); n != 2 {
		t.Fatalf("%d audit rows hold the times written, want 2", n)
	}
	sameJSON(t, "report", pgtest.MustString(t, s.Conn, "select report('v1')::text"),
		`{"approved": [1, 2], "committed": [1, 2], "remaining": [], "matching": [1, 2], "drifted": [], "missing": []}`)
	s.Exec(t, "update "+bill+".invoices set updated_at = updated_at + interval '1 second' where id = 2")
	sameJSON(t, "report after drift", pgtest.MustString(t, s.Conn, "select report('v1')::text"),
		`{"approved": [1, 2], "committed": [1, 2], "remaining": [], "matching": [1], "drifted": [2], "missing": []}`)
	s.Exec(t, "update "+bill+".invoices set updated_at = updated_at - interval '1 second' where id = 2")

	// The undo puts every written column back, set_now's included.
	s.Exec(t, "select register_undo('v1')")
	sameJSON(t, "undo", pgtest.MustString(t, s.Conn, "select run_chunk('v1-undo')::text"), `{"processed": [1, 2], "next_index": 2, "done": true}`)
	sameJSON(t, "invoices after the undo", pgtest.MustString(t, s.Conn, fmt.Sprintf(`select jsonb_agg(jsonb_build_array(id, status, voided_at, updated_at, voided_on) order by id)::text
	  from %s.invoices where id <= 2`, bill)),
		`[[1, "pending", null, "2020-01-01T00:00:00", null], [2, "authorized", null, "2020-01-01T00:00:00", null]]`)

	// A row whose status is none of the list, and one whose voided_at is
	// set, are named with what the change requires; nothing is written.
	s.Exec(t, "select register_change('void_invoice', $1)", changePlan("v2", "t", `[{"id": 3, "total": 30}]`, 1))
	_, err := pgtest.TryString(s.Conn, "select run_chunk('v2')::text")
	pgtest.WantPgError(t, err, "CH409", "id 3: status is shipped, the change requires one of pending, authorized")
	s.Exec(t, "select register_change('void_invoice', $1)", changePlan("v3", "t", `[{"id": 4, "total": 40}]`, 1))
	_, err = pgtest.TryString(s.Conn, "select run_chunk('v3')::text")
	pgtest.WantPgError(t, err, "CH409", "id 4: voided_at is 2021-02-03 04:05:06+00, the change requires null")
	sameJSON(t, "check", pgtest.MustString(t, s.Conn, "select jsonb_path_query_array(check_change('void_invoice', $1), '$.targets[*].problem')::text",
		changePlan("c", "t", `[{"id": 1, "total": 10}, {"id": 3, "total": 30}, {"id": 4, "total": 40}]`, 1)),
		`["", "id 3: status is shipped, the change requires one of pending, authorized", "id 4: voided_at is 2021-02-03 04:05:06+00, the change requires null"]`)
}

// set_now and when's lists and nulls are refused, naming the field, when
// they cannot mean what they say.
func TestChangeSetNowRefusals(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	bill := s.UserSchema(t, invoicesSQL+`; alter table %[1]s.invoices add column due timestamptz generated always as (voided_at) stored`)
	def := func(more string) string {
		return fmt.Sprintf(`{"name": "v", "table": "%s.invoices", "key": "id", "expect": ["total"], %s}`, bill, more)
	}
	for _, c := range []struct{ def, msg string }{
		{def(`"set_now": ["status"]`), "set_now: column " + bill + ".invoices.status is text, not timestamptz, timestamp or date"},
		{def(`"set_now": ["id"]`), "set_now: id is the key, the tenant or the version, which a change never sets"},
		{def(`"set_now": ["voided_at", "voided_at"]`), "set_now: voided_at is named twice, or is in set or set_from_target too"},
		{def(`"set": {"voided_at": "2020-01-01"}, "set_now": ["voided_at"]`), "set_now: voided_at is named twice, or is in set or set_from_target too"},
		{def(`"set_now": ["due"]`), "set_now: column " + bill + ".invoices.due is generated"},
		{def(`"set_now": ["nope"]`), "set_now: table " + bill + `.invoices has no column "nope"`},
		{def(`"set_now": "voided_at"`), "set_now: must be a list of column names, got string"},
		{def(`"set_now": [1]`), "set_now: must be a list of column names, got 1"},
		{def(`"set_now": ["voided_at"], "when": {"status": []}`), "when.status: a list must hold at least one value"},
		{def(`"set_now": ["voided_at"], "when": {"status": [["a"]]}`), "when.status: must be a string, number or boolean constant, a list of them, or null, got array"},
		{def(`"set_now": ["voided_at"], "when": {"total": [1, "lots"]}`),
			`when.total: constant "lots" is not a value of column ` + bill + `.invoices.total (integer): invalid input syntax for type integer: "lots"`},
		{def(`"set": {"status": null}`), "set.status: must be a string, number or boolean constant, got null"},
		{def(`"set": {"voided_on": "today"}`), `set.voided_on: constant "today" is relative to the day it is read; give the date or time itself, or name the column in set_now`},
	} {
		_, err := pgtest.TryString(s.Conn, "select define_change($1)::text", c.def)
		pgtest.WantPgError(t, err, "22023", c.msg)
		nothingDefined(t, s)
	}
}
