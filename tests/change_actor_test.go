package tests

import (
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestWhoRanItInATrigger (issue 38, item 6): docs/your-own-tables.md's
// history trigger, as written, on a payments table of this test. A chunk
// run by the operator's login records that login as chunks.actor with the
// job and the change, though the trigger runs as the writer; an update
// outside any chunk records its own role and no job; a value the operator
// set in its session is overwritten inside the chunk, and the settings are
// empty again after the chunk, in the same transaction.
func TestWhoRanItInATrigger(t *testing.T) {
	t.Parallel()
	blocks := pgtest.WantDocBlocks(t, 1, "history", "<!-- tests TestWhoRanItInATrigger", "your-own-tables.md")
	r := newRoles(t)
	shop := r.Schema.UserSchema(t, paymentsSQL)
	r.Schema.Exec(t, "grant usage on schema "+shop+" to "+r.owner.Name)
	history := strings.NewReplacer("shop.", shop+".", "lab_writer", writerOf(t, r.Schema)).Replace(blocks[0])
	r.Schema.Exec(t, history)
	owner, op := r.connect(t, r.owner), r.connect(t, r.operator)
	pgtest.MustBool(t, owner, "select define_change($1)", pgtest.HoldPayment(shop))
	pgtest.MustBool(t, op, "select register_change('hold_payment', $1)", changePlan("h1", "7", paymentTargets(2, 3), 2))

	tx, err := op.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "select set_config('chunks.actor', 'someone else', true), set_config('chunks.job_id', 'forged', true)"); err != nil {
		t.Fatal(err)
	}
	var after string
	if err := tx.QueryRow(ctx, `select run_chunk('h1') ->> 'done', current_setting('chunks.actor', true) || '|' || current_setting('chunks.job_id', true)
	    || '|' || current_setting('chunks.change', true)`).Scan(new(string), &after); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if after != "||" {
		t.Errorf("the settings after the chunk, in its transaction: %q, want all three empty", after)
	}
	r.Schema.Exec(t, "update "+shop+".payments set hold_reason = 'by hand' where payment_id = 3")
	got := pgtest.MustString(t, r.Schema.Conn, `select string_agg(format('%s %s %s %s %s', payment_id, status, changed_by,
	    coalesce(chunks_job, '-'), coalesce(chunks_change, '-')), ', ' order by at, payment_id) from `+shop+`.payment_history`)
	admin := pgtest.MustString(t, r.Schema.Conn, "select session_user::text")
	want := "2 on_hold " + r.operator.Name + " h1 hold_payment, 3 on_hold " + r.operator.Name + " h1 hold_payment, 3 on_hold " + admin + " - -"
	if got != want {
		t.Errorf("history:\n got %s\nwant %s", got, want)
	}
}
