package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/pgtest"
)

// userSchema creates a schema of the user's own tables (not chunks') for
// one test and drops it when the test ends; sql is run with %[1]s as the
// schema's name.
func userSchema(t testing.TB, s *pgtest.Schema, sql string) string {
	t.Helper()
	name := pgtest.NewSchemaName(t)
	s.Exec(t, "create schema "+name)
	t.Cleanup(func() {
		if _, err := s.Conn.Exec(ctx, "drop schema "+name+" cascade"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	s.Exec(t, fmt.Sprintf(sql, name))
	return name
}

// paymentsSQL is shop.payments of the issue, with a trigger that counts
// the updates of each row.
const paymentsSQL = `
create table %[1]s.payments(payment_id bigint primary key, merchant_id integer not null, status text not null,
  amount_cents integer not null, hold_reason text, lock_version integer not null default 0);
create table %[1]s.payment_updates(payment_id bigint, n integer);
create function %[1]s.count_update() returns trigger language plpgsql as $t$
begin
  insert into %[1]s.payment_updates values (new.payment_id, 1);
  return new;
end
$t$;
create trigger counted after update on %[1]s.payments for each row execute function %[1]s.count_update();
insert into %[1]s.payments select g, 7, 'captured', 100 * g, null, 3 from generate_series(1, 5) g;`

// holdPayment is the definition on shop.payments.
func holdPayment(shop string) string {
	return fmt.Sprintf(`{"name": "hold_payment", "table": "%s.payments", "key": "payment_id", "tenant": "merchant_id",
	  "version": "lock_version", "expect": ["amount_cents"], "when": {"status": "captured"},
	  "set": {"status": "on_hold"}, "set_from_target": {"hold_reason": "reason"}}`, shop)
}

// paymentTargets are targets of hold_payment for payments ids (lock_version 3).
func paymentTargets(ids ...int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf(`{"payment_id": %d, "lock_version": 3, "amount_cents": %d, "reason": "chargeback's #%d"}`, id, 100*id, id)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func changePlan(jobID, tenant, targets string, chunkSize int) string {
	return fmt.Sprintf(`{"job_id": %q, "tenant": %q, "targets": %s, "chunk_size": %d, "allow_partial": true}`, jobID, tenant, targets, chunkSize)
}

func mustBool(t testing.TB, conn *pgx.Conn, sql string, args ...any) bool {
	t.Helper()
	var b bool
	if err := conn.QueryRow(ctx, sql, args...).Scan(&b); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return b
}

// A declared change on shop.payments end to end: defined once (the same
// definition again is a no-op, another one CH409), a job of it registered
// (targets sorted by key), every chunk run through run_chunk, each row
// changed once (its trigger fired once), one change_audit row each with the
// before and after of every written column.
func TestChangePayments(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := userSchema(t, s, paymentsSQL)
	if !mustBool(t, s.Conn, "select define_change($1)", holdPayment(shop)) {
		t.Fatal("define_change: false for a new change")
	}
	if mustBool(t, s.Conn, "select define_change($1)", holdPayment(shop)) {
		t.Fatal("define_change: true for the same definition again")
	}
	_, err := tryString(s.Conn, "select define_change($1)::text", strings.Replace(holdPayment(shop), "on_hold", "held", 1))
	wantExactPgError(t, err, "CH409", "change hold_payment: already defined with a different definition (chunks change show hold_payment)")

	plan := changePlan("p1", "7", paymentTargets(4, 2, 1, 3), 2)
	if !mustBool(t, s.Conn, "select register_change('hold_payment', $1)", plan) {
		t.Fatal("register_change: false for a new job")
	}
	if mustBool(t, s.Conn, "select register_change('hold_payment', $1)", plan) {
		t.Fatal("register_change: true for the same plan again")
	}
	_, err = tryString(s.Conn, "select register_change('hold_payment', $1)::text", changePlan("p1", "7", paymentTargets(4, 2, 1), 2))
	wantExactPgError(t, err, "CH409", "job p1: already registered with different targets")
	sameJSON(t, "stored targets", mustString(t, s.Conn, "select targets::text from jobs where job_id = 'p1'"), paymentTargets(1, 2, 3, 4))

	for i, want := range []string{
		`{"processed": [1, 2], "next_index": 2, "done": false}`,
		`{"processed": [3, 4], "next_index": 4, "done": true}`,
		`{"processed": [], "next_index": 4, "done": true}`,
	} {
		sameJSON(t, fmt.Sprintf("chunk %d", i), mustString(t, s.Conn, "select run_chunk('p1')::text"), want)
	}
	sameJSON(t, "payments", mustString(t, s.Conn, fmt.Sprintf(`select jsonb_agg(jsonb_build_array(payment_id, status, hold_reason, lock_version) order by payment_id)::text from %s.payments`, shop)),
		`[[1, "on_hold", "chargeback's #1", 4], [2, "on_hold", "chargeback's #2", 4], [3, "on_hold", "chargeback's #3", 4],
		  [4, "on_hold", "chargeback's #4", 4], [5, "captured", null, 3]]`)
	sameJSON(t, "triggers", mustString(t, s.Conn, fmt.Sprintf(`select jsonb_object_agg(payment_id, n)::text from (select payment_id, sum(n) as n from %s.payment_updates group by 1) x`, shop)),
		`{"1": 1, "2": 1, "3": 1, "4": 1}`)
	sameJSON(t, "audit", mustString(t, s.Conn, `select jsonb_agg(jsonb_build_array(ordinal, key, version_before, version_after, before, after) order by ordinal)::text from change_audit where job_id = 'p1'`),
		`[[0, "1", 3, 4, {"status": "captured", "hold_reason": null}, {"status": "on_hold", "hold_reason": "chargeback's #1"}],
		  [1, "2", 3, 4, {"status": "captured", "hold_reason": null}, {"status": "on_hold", "hold_reason": "chargeback's #2"}],
		  [2, "3", 3, 4, {"status": "captured", "hold_reason": null}, {"status": "on_hold", "hold_reason": "chargeback's #3"}],
		  [3, "4", 3, 4, {"status": "captured", "hold_reason": null}, {"status": "on_hold", "hold_reason": "chargeback's #4"}]]`)

	// Drop is refused while a job of the change exists.
	_, err = tryString(s.Conn, "select drop_change('hold_payment')::text")
	wantExactPgError(t, err, "CH409", "change hold_payment: 1 jobs of it exist; a change is dropped only when none does")
}
