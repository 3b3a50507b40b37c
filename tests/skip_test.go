package tests

import (
	"fmt"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestSkipTarget (issue 38, item 1): a row edited by hand stalls its
// job's chunk; an operator sets that one target aside, for a reason kept
// with who, when and what the check said of the row, and the job goes on
// past it: the rest of its chunk and every later chunk run, the skipped
// row is never changed (its trigger never fires), a target skipped ahead
// of its chunk is passed over too, and report lists a seventh set,
// skipped. verify takes a skip in place of an audit row, and nothing
// else; the undo leaves skipped targets alone. Refused: a committed
// target, a key that is no target, a bad reason or key, a job of orders.
func TestSkipTarget(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	s.Exec(t, fmt.Sprintf("insert into %s.payments select g, 7, 'captured', 100 * g, null, 3, 'r' || g, g from generate_series(6, 9) g", shop))
	pgtest.MustBool(t, s.Conn, "select define_change($1)", pgtest.HoldPayment(shop))
	pgtest.MustBool(t, s.Conn, "select register_change('hold_payment', $1)", changePlan("p", "7", paymentTargets(1, 2, 3, 4, 5, 6, 7, 8), 3))
	q := func(sql string, args ...any) string { return pgtest.MustString(t, s.Conn, sql, args...) }
	sameJSON(t, "chunk 1", q("select run_chunk('p')::text"), `{"processed": [1, 2, 3], "next_index": 3, "done": false}`)

	// Payment 5 is edited by hand: its chunk stops there, all or nothing.
	s.Exec(t, "update "+shop+".payments set lock_version = 9 where payment_id = 5")
	refuse(t, s, "CH409", "payment_id 5: lock_version is 9, approved 3", "select run_chunk('p')")

	refuse(t, s, "22023", "reason: must say why the target is skipped, got an empty text", `select skip_target('p', '5', '')`)
	refuse(t, s, "22023", "key: must be the target's key (its value, or an object of a composite key's columns), got null", `select skip_target('p', null, 'x')`)
	refuse(t, s, "CH409", "job p: no target has key 99", `select skip_target('p', '99', 'x')`)
	refuse(t, s, "CH409", "job p: target 2 was committed (next_index is 3); a committed target is undone (chunks undo), not skipped",
		`select skip_target('p', '2', 'x')`)
	registerJob(t, s, "o", "acme", 1001, 5, 2)
	refuse(t, s, "CH409", `job o: a job of orders (the contract's cancellation) has no skips: run_chunk proves every target before next_index by its audit row (docs/limits-and-decisions.md "Skips")`,
		`select skip_target('o', '1001', 'x')`)

	me := q("select session_user::text")
	sameJSON(t, "skip 5", q(`select (skip_target('p', '5', 'edited by support, ticket 4411') - 'at')::text`),
		`{"job_id": "p", "key": 5, "skipped": true, "by": "`+me+`", "reason": "edited by support, ticket 4411",
		  "found": "payment_id 5: lock_version is 9, approved 3", "paused": false}`)
	sameJSON(t, "skip 5 again", q(`select jsonb_build_array(r -> 'skipped', r -> 'reason')::text from skip_target('p', '"5"', 'another') as r`),
		`[false, "edited by support, ticket 4411"]`)
	// Target 8, two chunks ahead, matches now: set aside all the same (found: null).
	sameJSON(t, "skip 8", q(`select jsonb_build_array(r -> 'skipped', r -> 'found')::text from skip_target('7', 'p', '8', 'not this one') as r`),
		`[true, null]`)

	sameJSON(t, "chunk 2", q("select run_chunk('p')::text"), `{"processed": [4, 6], "next_index": 6, "done": false}`)
	sameJSON(t, "chunk 3", q("select run_chunk('p')::text"), `{"processed": [7], "next_index": 8, "done": true}`)
	sameJSON(t, "payments", q(fmt.Sprintf(`select jsonb_agg(jsonb_build_array(payment_id, status, lock_version) order by payment_id)::text
	    from %s.payments where payment_id between 4 and 8`, shop)),
		`[[4, "on_hold", 4], [5, "captured", 9], [6, "on_hold", 4], [7, "on_hold", 4], [8, "captured", 3]]`)
	// (5's one update is the edit by hand)
	sameJSON(t, "triggers", q(fmt.Sprintf(`select jsonb_agg(payment_id order by payment_id)::text from %s.payment_updates where payment_id > 3`, shop)),
		`[4, 5, 6, 7]`)
	sameJSON(t, "chunks", q(`select jsonb_agg(jsonb_build_array(first_ordinal, size) order by first_ordinal)::text from change_chunks where job_id = 'p'`),
		`[[0, 3], [3, 3], [6, 2]]`)

	sameJSON(t, "report", q(`select (report('p') #- '{skipped,0,at}' #- '{skipped,1,at}')::text`),
		`{"approved": [1, 2, 3, 4, 5, 6, 7, 8], "committed": [1, 2, 3, 4, 6, 7], "remaining": [], "matching": [1, 2, 3, 4, 6, 7],
		  "drifted": [], "missing": [],
		  "skipped": [{"key": 5, "reason": "edited by support, ticket 4411", "by": "`+me+`", "found": "payment_id 5: lock_version is 9, approved 3"},
		              {"key": 8, "reason": "not this one", "by": "`+me+`", "found": null}]}`)
	sameJSON(t, "verify", q(`select (verify_job('p') -> 'sound')::text`), `true`)
	sameJSON(t, "undo", q(`select (register_undo('p') -> 'targets')::text`), `[1, 2, 3, 4, 6, 7]`)
	refuse(t, s, "CH409", "job p: already done (next_index 8 of 8); nothing to skip", `select skip_target('p', '8', 'late')`)

	// The proof takes a skip in place of an audit row, and nothing else: a
	// skip beside the audit row of its target, or one naming another key,
	// is not sound.
	for _, tamper := range [][2]string{
		{`insert into job_skips (job_id, ordinal, key, reason, skipped_by) values ('p', 0, '1', 'forged', 'x')`,
			`delete from job_skips where job_id = 'p' and ordinal = 0`},
		{`update job_skips set key = '6' where job_id = 'p' and ordinal = 4`, `update job_skips set key = '5' where job_id = 'p' and ordinal = 4`},
	} {
		s.Exec(t, tamper[0])
		refuse(t, s, "CH409", "job p: the stored job is not sound: its audit (change_audit) is not exactly targets[0:8]", `select report('p')`)
		sameJSON(t, tamper[0], q(`select (verify_job('p') -> 'sound')::text`), `false`)
		s.Exec(t, tamper[1])
	}
	sameJSON(t, "verify again", q(`select (verify_job('p') -> 'sound')::text`), `true`)
}

// TestCampaignSkipMismatched (issue 38, item 1): three rows of a
// campaign's targets are edited by hand mid-run; their jobs pause; one
// campaign_skip sets aside exactly those three, each with what its row
// says now, and resumes those jobs; campaign check no longer counts them,
// the campaign finishes, and its report shows every other target matching
// and the three skipped with their reason.
func TestCampaignSkipMismatched(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	s.Exec(t, fmt.Sprintf("insert into %s.payments select g, 7, 'captured', 100 * g, null, 3, 'r' || g, g from generate_series(6, 250) g", shop))
	pgtest.MustBool(t, s.Conn, "select define_change($1)", pgtest.HoldPayment(shop))
	ids := make([]int, 250)
	for i := range ids {
		ids[i] = i + 1
	}
	q := func(sql string, args ...any) string { return pgtest.MustString(t, s.Conn, sql, args...) }
	q(`select campaign_create_change('c', 'hold_payment', '7', 1, $1::jsonb, null, 16)::text`, paymentTargets(ids...))
	// Jobs of 100 targets, chunks of 1. A worker's first passes run a
	// chunk of each job; then 12, 13 and 144 are edited by hand (jobs 1 and
	// 2), and the worker pauses those two jobs and finishes the third.
	for range 3 {
		q(`select run_next_chunk('w1')::text`)
	}
	s.Exec(t, "update "+shop+".payments set amount_cents = 1 where payment_id in (12, 13, 144)")
	for range 400 {
		if q(`select coalesce(run_next_chunk('w1'), 'null')::text`) == "null" {
			break
		}
	}
	if paused := q(`select coalesce(string_agg(job_id, ' ' order by job_id), '') from job_queue where paused`); paused != "c-000001 c-000002" {
		t.Fatalf("paused after 3 rows were edited: %q", paused)
	}
	check := q(`select jsonb_build_array(c -> 'problems', c -> 'listed' -> 0 ->> 'problem')::text from campaign_check('c') as c`)
	sameJSON(t, "check before", check, `[3, "payment_id 12: amount_cents is 1, approved 1200"]`)

	refuse(t, s, "22023", "reason: must say why the targets are skipped, got null", `select campaign_skip('c', null)`)
	got := q(`select campaign_skip('c', 'edited by support')::text`)
	sameJSON(t, "campaign skip", got,
		`{"name": "c", "reason": "edited by support", "campaign_paused": false, "resumed": ["c-000001", "c-000002"],
		  "skipped": [{"job_id": "c-000001", "key": 12, "found": "payment_id 12: amount_cents is 1, approved 1200"},
		              {"job_id": "c-000001", "key": 13, "found": "payment_id 13: amount_cents is 1, approved 1300"},
		              {"job_id": "c-000002", "key": 144, "found": "payment_id 144: amount_cents is 1, approved 14400"}]}`)
	sameJSON(t, "check after", q(`select (campaign_check('c') -> 'problems')::text`), `0`)
	for range 400 {
		if q(`select coalesce(run_next_chunk('w1'), 'null')::text`) == "null" {
			break
		}
	}
	sameJSON(t, "report", q(`select jsonb_build_array(r -> 'committed', r -> 'remaining', r -> 'matching', r -> 'skipped_count',
	    (select jsonb_agg(jsonb_build_array(e -> 'job_id', e -> 'key', e -> 'reason')) from jsonb_array_elements(r -> 'skipped') as e))::text
	    from campaign_report('c') as r`),
		`[247, 0, 247, 3, [["c-000001", 12, "edited by support"], ["c-000001", 13, "edited by support"], ["c-000002", 144, "edited by support"]]]`)
	if got := q(fmt.Sprintf(`select string_agg(payment_id::text || ':' || status, ' ' order by payment_id) from %s.payments where payment_id in (11, 12, 13, 144, 145)`, shop)); got != "11:on_hold 12:captured 13:captured 144:captured 145:on_hold" {
		t.Errorf("payments: %s", got)
	}
}
