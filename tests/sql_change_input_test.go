package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// ratesSQL is a table with a float column, for values out of its range.
const ratesSQL = `
create table %[1]s.rates(id bigint primary key, rate double precision not null, v integer not null, due date);
insert into %[1]s.rates select g, g, 1 from generate_series(1, 3) g;`

// Issue 35 item 9: a key given twice in a definition is refused at the SQL
// face too, naming where (jsonb would keep the last one), and nothing is
// defined. define_change(text) reads the text itself; a string literal or
// an untyped parameter goes to it.
func TestChangeDefineDuplicateKeys(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	p := shop + ".payments"
	head := `{"name": "hold_payment", "table": "` + p + `", "key": "payment_id", "version": "lock_version"`
	for _, c := range []struct{ name, def, msg string }{
		{"set", head + `, "set": {"status": "approved-value", "status": "sneaky"}}`, `set: duplicate key "status"`},
		{"when", head + `, "when": {"status": "captured", "amount_cents": 1, "status": "void"}, "set": {"status": "on_hold"}}`,
			`when: duplicate key "status"`},
		{"set_from_target", head + `, "set_from_target": {"hold_reason": "reason", "hold_reason": "why"}}`,
			`set_from_target: duplicate key "hold_reason"`},
		{"top level", head + `, "set": {"status": "on_hold"}, "table": "` + shop + `.payment_updates"}`, `definition: duplicate key "table"`},
		{"the name", `{"name": "a", "name": "b"}`, `definition: duplicate key "name"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := pgtest.TryString(s.Conn, "select define_change($1)::text", c.def)
			pgtest.WantPgError(t, err, "22023", c.msg)
			_, err = pgtest.TryString(s.Conn, "select define_change('"+strings.ReplaceAll(c.def, "'", "''")+"')::text")
			pgtest.WantPgError(t, err, "22023", c.msg)
			nothingDefined(t, s)
		})
	}
	// Text that is not JSON is a 22023 naming the definition, not a raw 22P02.
	_, err := pgtest.TryString(s.Conn, "select define_change($1)::text", `{"name": }`)
	pgtest.WantPgError(t, err, "22023", `definition: is not valid JSON: Expected JSON value, but found "}".`)
	// The same definition without the duplicate is defined, through text
	// and through jsonb alike.
	def := head + `, "set": {"status": "approved-value"}}`
	if !pgtest.MustBool(t, s.Conn, "select define_change($1)", def) {
		t.Fatal("define_change(text): false for a new change")
	}
	if pgtest.MustBool(t, s.Conn, "select define_change($1::jsonb)", def) {
		t.Fatal("define_change(jsonb) of the same definition: true")
	}
	sameJSON(t, "the definition's set", pgtest.MustString(t, s.Conn, "select (definition -> 'set')::text from changes where name = 'hold_payment'"),
		`{"status": "approved-value"}`)
}

// Issue 35 item 16: \u0000, which PostgreSQL text cannot store, is refused
// as invalid input (22023) naming the field, where jsonb gave a raw 22P05;
// an escaped backslash before u0000 is text like any other.
func TestChangeDefineNUL(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	p := shop + ".payments"
	head := `{"name": "hold_payment", "table": "` + p + `", "key": "payment_id", "version": "lock_version"`
	for _, c := range []struct{ name, def, msg string }{
		{"a constant", head + `, "set": {"status": "on\u0000hold"}}`, `set.status: must not contain \u0000 (PostgreSQL text cannot store it)`},
		{"a when constant", head + `, "when": {"status": "x\\\u0000"}, "set": {"status": "on_hold"}}`,
			`when.status: must not contain \u0000 (PostgreSQL text cannot store it)`},
		{"a key", head + `, "set": {"sta\u0000tus": "on_hold"}}`, `set: key "sta\u0000tus" must not contain \u0000 (PostgreSQL text cannot store it)`},
		{"the name", `{"name": "\u0000", "table": "x.y"}`, `name: must not contain \u0000 (PostgreSQL text cannot store it)`},
		{"an expect column", head + `, "expect": ["amount_cents", "\u0000"], "set": {"status": "on_hold"}}`,
			`expect[1]: must not contain \u0000 (PostgreSQL text cannot store it)`},
		{"a top-level key", head + `, "\u0000": 1}`, `definition: key "\u0000" must not contain \u0000 (PostgreSQL text cannot store it)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := pgtest.TryString(s.Conn, "select define_change($1)::text", c.def)
			pgtest.WantPgError(t, err, "22023", c.msg)
			nothingDefined(t, s)
		})
	}
	// \\u0000 is a backslash, then u0000: a constant like any other.
	if !pgtest.MustBool(t, s.Conn, "select define_change($1)", head+`, "set": {"status": "on\\u0000hold"}}`) {
		t.Fatal("define_change: false for a new change")
	}
	if got := pgtest.MustString(t, s.Conn, "select definition -> 'set' ->> 'status' from changes"); got != `on\u0000hold` {
		t.Fatalf("the constant: %q", got)
	}
}

// Issue 35 item 16: a view, a materialized view, a foreign table or a
// sequence is said to be one, not "no table".
func TestChangeDefineNotATable(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL+`
create view %[1]s.v as select * from %[1]s.payments;
create materialized view %[1]s.mv as select * from %[1]s.payments;
create sequence %[1]s.seq;
create type %[1]s.pair as (a integer, b integer);
create foreign data wrapper %[1]s_fdw;
create server %[1]s_server foreign data wrapper %[1]s_fdw;
create foreign table %[1]s.ft(payment_id bigint not null) server %[1]s_server;`)
	t.Cleanup(func() { s.Exec(t, "drop foreign data wrapper "+shop+"_fdw cascade") })
	for rel, what := range map[string]string{
		"v": "a view", "mv": "a materialized view", "ft": "a foreign table", "seq": "a sequence",
		"pair": "a composite type", "payments_pkey": "an index",
	} {
		t.Run(rel, func(t *testing.T) {
			_, err := pgtest.TryString(s.Conn, "select define_change($1)::text", definitionWith(t, shop, map[string]any{"table": shop + "." + rel}))
			pgtest.WantPgError(t, err, "22023", `table: "`+shop+`.`+rel+`" is `+what+`; a change is of an ordinary or partitioned table`)
			nothingDefined(t, s)
		})
	}
	_, err := pgtest.TryString(s.Conn, "select define_change($1)::text", definitionWith(t, shop, map[string]any{"table": shop + ".nope"}))
	pgtest.WantPgError(t, err, "22023", `table: there is no table "`+shop+`.nope"`)
}

// Issue 35 item 15: a refused value is shortened in the whole message, the
// server's own words included: a 900 KB constant and 1e400 (401 digits)
// for a float column, at define and in a job's target.
func TestChangeLongValuesExcerpted(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL+ratesSQL)
	p, r := shop+".payments", shop+".rates"
	long := strings.Repeat("x", 900_000)
	big := "1" + strings.Repeat("0", 400) // 1e400 as jsonb prints it
	for _, c := range []struct{ name, def, msg string }{
		{"900 KB constant", definitionWith(t, shop, map[string]any{"set": map[string]any{"amount_cents": long}}),
			`set.amount_cents: constant ` + driver.Excerpt(`"`+long+`"`, false) + ` is not a value of column ` + p + `.amount_cents (integer): ` +
				`invalid input syntax for type integer: "` + driver.Excerpt(long, false) + `"`},
		{"1e400 constant", `{"name": "rate", "table": "` + r + `", "key": "id", "expect": ["v"], "set": {"rate": 1e400}}`,
			`set.rate: constant ` + driver.Excerpt(big, false) + ` is not a value of column ` + r + `.rate (double precision): "` +
				driver.Excerpt(big, false) + `" is out of range for type double precision`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := pgtest.TryString(s.Conn, "select define_change($1)::text", c.def)
			pgtest.WantPgError(t, err, "22023", c.msg)
			if len(c.msg) > 400 {
				t.Fatalf("the message is %d bytes", len(c.msg))
			}
			nothingDefined(t, s)
		})
	}
	if !pgtest.MustBool(t, s.Conn, "select define_change($1)", `{"name": "rate", "table": "`+r+`", "key": "id", "expect": ["v"], "set_from_target": {"rate": "new_rate", "due": "new_due"}}`) {
		t.Fatal("define_change: false")
	}
	for _, c := range []struct{ name, target, msg string }{
		{"1e400 target", `{"id": 1, "v": 1, "new_rate": 1e400, "new_due": "2024-06-01"}`,
			`targets[0].new_rate: ` + driver.Excerpt(big, false) + ` is not a value of column rate (double precision): "` +
				driver.Excerpt(big, false) + `" is out of range for type double precision`},
		{"900 KB target", `{"id": 1, "v": 1, "new_rate": 1, "new_due": "` + long + `"}`,
			`targets[0].new_due: ` + driver.Excerpt(`"`+long+`"`, false) + ` is not a value of column due (date): ` +
				`invalid input syntax for type date: "` + driver.Excerpt(long, false) + `"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, fn := range []string{"register_change", "check_change"} {
				_, err := pgtest.TryString(s.Conn, fmt.Sprintf("select %s('rate', $1)::text", fn), changePlan("r1", "t", "["+c.target+"]", 1))
				pgtest.WantPgError(t, err, "22023", c.msg)
			}
			if got := pgtest.MustString(t, s.Conn, "select count(*)::text from jobs"); got != "0" {
				t.Fatalf("%s jobs", got)
			}
		})
	}
}

// Issue 35 item 14: two defines of one name at once. The second waits for
// the first to commit, then answers as if it had come after it: false for
// the same definition, CH409 for another; never a raw 23505 on pg_proc.
func TestChangeDefineConcurrently(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	for _, c := range []struct {
		name, second string
		want         string // "false", or the CH409 message
	}{
		{"the same definition", pgtest.HoldPayment(shop), "false"},
		{"another definition", definitionWith(t, shop, map[string]any{"set": map[string]any{"status": "held"}}),
			"change hold_payment: already defined with a different definition (chunks change show hold_payment)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s.Exec(t, "select drop_change('hold_payment')")
			_, got, err := defineBehind(t, s, pgtest.HoldPayment(shop), "", c.second)
			if c.want == "false" && (got != "false" || err != nil) {
				t.Fatalf("the second define: %s, %v; want false", got, err)
			}
			if c.want != "false" {
				pgtest.WantPgError(t, err, "CH409", c.want)
			}
			if got := pgtest.MustString(t, s.Conn, "select string_agg(name || ' ' || (definition #>> '{set,status}'), ',') from changes"); got != "hold_payment on_hold" {
				t.Fatalf("changes: %s", got)
			}
		})
	}
}

// The second define in a repeatable read transaction cannot see the first
// one's change: a serialization failure (40001) naming the change, which a
// retry answers, never a raw 23505.
func TestChangeDefineConcurrentlyRepeatableRead(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	second, _, err := defineBehind(t, s, pgtest.HoldPayment(shop), "begin isolation level repeatable read", pgtest.HoldPayment(shop))
	pgtest.WantPgError(t, err, "40001", "change hold_payment: defined by another transaction that this one's snapshot cannot see; run define_change again")
	if _, err := second.Exec(ctx, "rollback"); err != nil {
		t.Fatal(err)
	}
	if pgtest.MustBool(t, second, "select define_change($1)", pgtest.HoldPayment(shop)) {
		t.Fatal("the retry: true, want false (already defined)")
	}
}

// defineBehind defines first in a transaction of one session and, while
// it is open, second in another session (after begin, unless it is ""):
// once that define waits for a lock, the first commits. It returns the
// second session and what its define returned.
func defineBehind(t *testing.T, s *pgtest.Schema, first, begin, second string) (*pgx.Conn, string, error) {
	t.Helper()
	tx, err := pgtest.Connect(t, s.DSN).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if got := pgtest.MustString(t, tx.Conn(), "select define_change($1)::text", first); got != "true" {
		t.Fatalf("the first define: %s", got)
	}
	conn := pgtest.Connect(t, s.DSN)
	pid := pgtest.MustString(t, conn, "select pg_backend_pid()::text")
	if begin != "" {
		if _, err := conn.Exec(ctx, begin); err != nil {
			t.Fatal(err)
		}
	}
	type answer struct {
		got string
		err error
	}
	done := make(chan answer, 1)
	go func() {
		got, err := pgtest.TryString(conn, "select define_change($1)::text", second)
		done <- answer{got, err}
	}()
	waitForLock(t, s, pid)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	return conn, a.got, a.err
}
