package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestRetireChange (issue 38, item 2): a change is retired once every job
// of it ended (finished, abandoned or archived): its functions go, its
// definition and digest stay, and its old jobs still report and verify by
// the definition they were approved under, but never run nor undo. A new
// definition under the name is a new version, with jobs of its own; the
// old definition again, once the new one is retired, is the old version
// live again (its undo works again).
func TestRetireChange(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	s.Exec(t, fmt.Sprintf("insert into %s.payments select g, 7, 'captured', 100 * g, null, 3, 'r' || g, g from generate_series(6, 9) g", shop))
	q := func(sql string, args ...any) string { return pgtest.MustString(t, s.Conn, sql, args...) }
	v1 := pgtest.HoldPayment(shop)
	q("select define_change($1)::text", v1)
	digest1 := q("select digest from changes where name = 'hold_payment'")
	q("select register_change('hold_payment', $1)::text", changePlan("p1", "7", paymentTargets(1, 2), 2))
	q("select run_chunk('p1')::text")
	q("select register_change('hold_payment', $1)::text", changePlan("p2", "7", paymentTargets(3, 4), 2))

	refuse(t, s, "CH409", "change hold_payment: 1 job of it has not ended; a change is retired once every job of it is finished, abandoned or archived",
		"select retire_change('hold_payment')")
	q("select abandon_job('p2', 'not needed')::text")
	sameJSON(t, "retire", q("select retire_change('hold_payment')::text"), `{"name": "hold_payment", "digest": "`+digest1+`", "jobs": 2}`)
	refuse(t, s, "CH409", "change hold_payment: not defined (or already retired)", "select retire_change('hold_payment')")
	if got := q(`select count(*)::text from pg_proc where pronamespace = $1::regnamespace and proname like '%hold_payment'`, s.Name); got != "0" {
		t.Errorf("functions left after retire: %s", got)
	}
	sameJSON(t, "change_list", q("select change_list()::text"), `[]`)
	sameJSON(t, "report of an old job", q("select (report('p1') -> 'matching')::text"), `[1, 2]`)
	sameJSON(t, "verify of an old job", q("select (verify_job('p1') -> 'sound')::text"), `true`)
	refuse(t, s, "CH409", "job p1: its change hold_payment was redefined or dropped since it was approved", "select register_undo('p1')")

	// A new version: another definition under the name, and a job of it.
	v2 := strings.Replace(v1, `"on_hold"`, `"disputed"`, 1)
	sameJSON(t, "define v2", q("select define_change($1)::text", v2), `true`)
	q("select register_change('hold_payment', $1)::text", changePlan("p3", "7", paymentTargets(6, 7), 2))
	sameJSON(t, "run v2", q("select run_chunk('p3')::text"), `{"processed": [6, 7], "next_index": 2, "done": true}`)
	if got := q(fmt.Sprintf("select string_agg(payment_id || ':' || status, ' ' order by payment_id) from %s.payments where payment_id in (1, 6)", shop)); got != "1:on_hold 6:disputed" {
		t.Errorf("payments: %s", got)
	}
	sameJSON(t, "report of the old job beside the new version", q("select (report('p1') -> 'matching')::text"), `[1, 2]`)
	refuse(t, s, "CH409", "change hold_payment: already defined with a different definition (chunks change show hold_payment)", "select define_change($1)", v1)

	// v2 retired, v1 defined again: the first version, live again.
	q("select retire_change('hold_payment')::text")
	sameJSON(t, "define v1 again", q("select define_change($1)::text", v1), `true`)
	if got := q("select string_agg(left(digest, 8) || ' ' || (retired_at is null)::text, ', ' order by defined_at) from changes"); got != digest1[:8]+" true, "+
		q("select left(digest, 8) from changes where retired_at is not null")+" false" {
		t.Errorf("changes: %s", got)
	}
	sameJSON(t, "undo of the old job", q("select (register_undo('p1') -> 'targets')::text"), `[1, 2]`)
}
