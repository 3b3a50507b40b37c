package tests

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestChangeChunkLocksRowsInKeyOrder: a chunk of a declared change locks
// its rows in ascending key order, one by one as its one UPDATE changes
// them (apply_<name> has no separate FOR UPDATE since issue 26), as
// TestSQLRunChunkLocksOrdersInIDOrder shows for the built-in path: while
// it waits for the row of key 3, which another session is updating, it
// holds the rows of 1 and 2 and not those of 4 and 5. The other session
// changes a column the chunk writes but does not check (hold_reason, a
// set_from_target column) and commits: the chunk then changes the row
// anyway, and its audit keeps the value it replaced, the other session's,
// not the one its statement's snapshot saw. apply_hold_payment is called
// directly, as run_chunk calls it (its audit rows written as run_chunk
// writes them), so that no lock_timeout of run_chunk's
// cuts the wait short on a slow machine.
func TestChangeChunkLocksRowsInKeyOrder(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	s.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	s.Exec(t, "select register_change('hold_payment', $1)", changePlan("j", "7", paymentTargets(1, 2, 3, 4, 5), 5))
	tx := holding(t, s, "update "+shop+".payments set hold_reason = 'another session''s' where payment_id = 3")
	// As run_chunk does: the writer's function changes the rows and returns their audit rows, written here.
	done := waitingFor(t, s, `insert into change_audit (job_id, ordinal, key, version_before, version_after, before, after)
	    select 'j', r.ordinal, r.key, r.version_before, r.version_after, r.before, r.after
	      from apply_hold_payment('j', '7', 0, job_targets('j')) as a,
	           unnest(a.ordinals, a.keys, a.versions_before, a.versions_after, a.befores, a.afters)
	           as r(ordinal, key, version_before, version_after, before, after)`)
	// Rows 1 and 2 are the runner's; 4 and 5 are not locked yet.
	if got := pgtest.MustString(t, s.Conn, `select coalesce(string_agg(payment_id::text, ' ' order by payment_id), '')
	    from (select payment_id from `+shop+`.payments where payment_id in (1, 2, 4, 5)
	           order by payment_id for update skip locked) as free`); got != "4 5" {
		t.Errorf("rows free while the chunk waits for key 3: %q, want \"4 5\" (1 and 2 locked by the chunk, in key order)", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("apply_hold_payment after the other session committed: %v", err)
	}
	if got := pgtest.MustString(t, s.Conn, "select string_agg(concat_ws(' ', payment_id, status, lock_version, hold_reason), ', ' order by payment_id) from "+
		shop+".payments"); got != "1 on_hold 4 chargeback's #1, 2 on_hold 4 chargeback's #2, 3 on_hold 4 chargeback's #3, "+
		"4 on_hold 4 chargeback's #4, 5 on_hold 4 chargeback's #5" {
		t.Errorf("rows after the chunk: %s", got)
	}
	if got := pgtest.MustString(t, s.Conn, `select string_agg(concat_ws(' ', ordinal, key, version_before, version_after, before, after), E'\n' order by ordinal)
	    from change_audit where job_id = 'j'`); got != `0 1 3 4 {"status": "captured", "hold_reason": null} {"status": "on_hold", "hold_reason": "chargeback's #1"}
1 2 3 4 {"status": "captured", "hold_reason": null} {"status": "on_hold", "hold_reason": "chargeback's #2"}
2 3 3 4 {"status": "captured", "hold_reason": "another session's"} {"status": "on_hold", "hold_reason": "chargeback's #3"}
3 4 3 4 {"status": "captured", "hold_reason": null} {"status": "on_hold", "hold_reason": "chargeback's #4"}
4 5 3 4 {"status": "captured", "hold_reason": null} {"status": "on_hold", "hold_reason": "chargeback's #5"}` {
		t.Errorf("the chunk's audit:\n%s", got)
	}
}

// TestChangeChunkOnAPartitionedTable: a chunk of a declared change on a
// partitioned table audits each row's own before values, though rows of
// different partitions share a ctid (the generated function reads the
// before values by ctid and tableoid).
func TestChangeChunkOnAPartitionedTable(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, `create table %[1]s.tickets(id integer primary key, qty integer not null, state text not null)
	  partition by range (id);
	create table %[1]s.tickets_low partition of %[1]s.tickets for values from (1) to (11);
	create table %[1]s.tickets_high partition of %[1]s.tickets for values from (11) to (21);
	insert into %[1]s.tickets values (1, 1, 'one'), (2, 1, 'two'), (11, 1, 'eleven'), (12, 1, 'twelve');`)
	s.Exec(t, "select define_change($1)", `{"name": "mark_ticket", "table": "`+shop+`.tickets", "key": "id", "expect": ["qty"],
	  "set": {"state": "marked"}}`)
	s.Exec(t, "select register_change('mark_ticket', $1)", changePlan("j", "acme",
		`[{"id": 1, "qty": 1}, {"id": 2, "qty": 1}, {"id": 11, "qty": 1}, {"id": 12, "qty": 1}]`, 10))
	s.Exec(t, "select run_chunk('j')")
	if got := pgtest.MustString(t, s.Conn, `select string_agg(concat_ws(' ', key, before, after), E'\n' order by ordinal)
	    from change_audit where job_id = 'j'`); got != `1 {"state": "one"} {"state": "marked"}
2 {"state": "two"} {"state": "marked"}
11 {"state": "eleven"} {"state": "marked"}
12 {"state": "twelve"} {"state": "marked"}` {
		t.Errorf("the chunk's audit:\n%s", got)
	}
}

// waitingFor runs sql in a session of its own until it waits for a lock,
// and returns the channel that gets its error (nil) when it ends.
func waitingFor(t testing.TB, s *pgtest.Schema, sql string) <-chan error {
	t.Helper()
	runner := pgtest.Connect(t, s.DSN)
	pid := pgtest.MustString(t, runner, "select pg_backend_pid()::text")
	done := make(chan error, 1)
	go func() {
		_, err := runner.Exec(ctx, sql)
		done <- err
	}()
	waitForLock(t, s, pid)
	return done
}
