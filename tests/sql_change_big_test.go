package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// bigPaymentTargets is the targets of payments first..last, as a JSON list.
func bigPaymentTargets(first, last int) string {
	var b strings.Builder
	b.WriteByte('[')
	for id := first; id <= last; id++ {
		if id > first {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"payment_id": %d, "lock_version": 3, "amount_cents": %d, "reason": "r%d"}`, id, 100*id, id)
	}
	b.WriteByte(']')
	return b.String()
}

// issue 37, item 1: a job of a declared change holds up to 10,000 targets
// and runs chunks of up to 1,000 rows. Its targets are rows
// (change_targets, by ordinal); each chunk reads its range and is recorded
// (change_chunks); verify and report prove the whole record; one more
// target, or one more row a chunk, is refused before anything is written.
func TestChangeBigJob(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, strings.Replace(paymentsSQL, "generate_series(1, 5)", "generate_series(1, 10001)", 1))
	s.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))

	refuse(t, s, "22023", "targets: must be a list of 1 to 10000 targets, got 10001",
		"select register_change('hold_payment', $1)::text", changePlan("big", "7", bigPaymentTargets(1, 10001), 1000))
	refuse(t, s, "22023", "chunk_size: must be between 1 and 1000, got 1001",
		"select register_change('hold_payment', $1)::text", changePlan("big", "7", bigPaymentTargets(1, 10), 1001))

	// Registered in reverse key order: stored sorted, one row per target.
	plan := changePlan("big", "7", bigPaymentTargets(1, 10000), 1000)
	if !pgtest.MustBool(t, s.Conn, "select register_change('hold_payment', $1)", plan) {
		t.Fatal("register_change: false for a new job")
	}
	sameJSON(t, "the job's rows", pgtest.MustString(t, s.Conn, `select jsonb_build_array(
	    (select jsonb_build_array(chunk_size, targets) from change_jobs where job_id = 'big'),
	    (select jsonb_build_array(count(*), min(ordinal), max(ordinal), min((target ->> 'payment_id')::int), count(distinct target ->> 'payment_id'))
	       from change_targets where job_id = 'big'),
	    (select jsonb_build_array(targets, chunk_size, next_index) from jobs where job_id = 'big'),
	    (select targets_sha256 = targets_sha256(job_targets('big')) from job_approval where job_id = 'big'),
	    (select jsonb_build_array(targets, chunk_size, in_rows) from job_shapes where job_id = 'big'))::text`),
		`[[1000, 10000], [10000, 0, 9999, 1, 10000], [{"change_targets": 10000}, 1, 0], true, [10000, 1000, true]]`)
	// The same plan again is the same approval; the inspect shows the targets.
	if pgtest.MustBool(t, s.Conn, "select register_change('hold_payment', $1)", plan) {
		t.Fatal("register_change: true for the same plan again")
	}
	sameJSON(t, "inspect", pgtest.MustString(t, s.Conn, `select jsonb_build_array(j ->> 'chunk_size', jsonb_array_length(j -> 'targets'), j -> 'targets' -> 9999 ->> 'payment_id')::text
	    from inspect_job('big') as j`), `["1000", 10000, "10000"]`)

	// Each chunk proves the approval's kind, tenant and chunk size; the job's
	// shape and targets cannot be rewritten.
	s.Exec(t, "update jobs set tenant = 'x9' where job_id = 'big'")
	_, err := pgtest.TryString(s.Conn, "select run_chunk('big')::text")
	pgtest.WantPgError(t, err, "CH409", `job big: the stored job is no longer the registered approval: its tenant is "x9", registered "7"`)
	s.Exec(t, "update jobs set tenant = '7' where job_id = 'big'")
	_, err = pgtest.TryString(s.Conn, "update change_jobs set chunk_size = 10 where job_id = 'big' returning 'rewritten'")
	pgtest.WantPgError(t, err, "CH409", "change_jobs: an approved job's targets are written once, by register; register a new job instead")

	for i := 0; i < 10; i++ {
		got := pgtest.MustString(t, s.Conn, `select jsonb_build_array(jsonb_array_length(r -> 'processed'), r -> 'processed' -> 0, r -> 'next_index', r -> 'done')::text
		    from run_chunk('big') as r`)
		sameJSON(t, fmt.Sprintf("chunk %d", i), got, fmt.Sprintf(`[1000, %d, %d, %t]`, 1000*i+1, 1000*(i+1), i == 9))
	}
	sameJSON(t, "done", pgtest.MustString(t, s.Conn, "select run_chunk('big')::text"), `{"processed": [], "next_index": 10000, "done": true}`)
	sameJSON(t, "the rows and the record", pgtest.MustString(t, s.Conn, fmt.Sprintf(`select jsonb_build_array(
	    (select count(*) from %[1]s.payments where status = 'on_hold' and lock_version = 4),
	    (select count(*) from %[1]s.payments where status = 'captured' and payment_id = 10001),
	    (select count(*) from %[1]s.payment_updates),
	    (select count(*) from change_audit where job_id = 'big'),
	    (select jsonb_agg(size order by first_ordinal) from change_chunks where job_id = 'big'))::text`, shop)),
		`[10000, 1, 10000, 10000, [1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000]]`)
	sameJSON(t, "verify", pgtest.MustString(t, s.Conn, "select verify_job('big')::text"),
		`{"job_id": "big", "sound": true, "problem": null, "targets": 10000, "chunk_size": 1000, "next_index": 10000, "chunks": 10}`)
	sameJSON(t, "report", pgtest.MustString(t, s.Conn, `select jsonb_build_array(jsonb_array_length(r -> 'matching'), r -> 'drifted', r -> 'missing')::text
	    from report('big') as r`), `[10000, [], []]`)

	// The undo of 10,000 rows is one job of the same shape.
	sameJSON(t, "undo", pgtest.MustString(t, s.Conn, `select jsonb_build_array(u ->> 'job_id', jsonb_array_length(u -> 'targets'))::text
	    from register_undo('big') as u`), `["big-undo", 10000]`)
	sameJSON(t, "the undo's shape", pgtest.MustString(t, s.Conn, "select jsonb_build_array(chunk_size, targets)::text from change_jobs where job_id = 'big-undo'"),
		`[1000, 10000]`)
	for i := 0; i < 10; i++ {
		s.Exec(t, "select run_chunk('big-undo')")
	}
	sameJSON(t, "undone", pgtest.MustString(t, s.Conn, fmt.Sprintf(`select jsonb_build_array(
	    (select count(*) from %[1]s.payments where status = 'captured' and lock_version = 5),
	    (verify_job('big-undo') ->> 'sound')::boolean)::text`, shop)), `[10000, true]`)

	// A campaign of a change makes jobs of up to 100 chunks and 10,000 targets.
	s.Exec(t, fmt.Sprintf("update %s.payments set status = 'captured', lock_version = 3", shop))
	sameJSON(t, "campaign", pgtest.MustString(t, s.Conn, `select jsonb_build_array(c ->> 'jobs', c ->> 'targets')::text
	    from campaign_create_change('wide', 'hold_payment', '7', 30, $1::jsonb, null, 16) as c`, bigPaymentTargets(1, 7001)),
		`["3", "7001"]`)
	sameJSON(t, "campaign jobs", pgtest.MustString(t, s.Conn, `select jsonb_agg(jsonb_build_array(cj.job_id, s.targets, s.chunk_size) order by cj.seq)::text
	    from campaign_jobs as cj join job_shapes as s using (job_id) where cj.campaign = 'wide'`),
		`[["wide-000001", 3000, 30], ["wide-000002", 3000, 30], ["wide-000003", 1001, 30]]`)
	for i := 0; pgtest.MustString(t, s.Conn, "select coalesce(run_next_chunk('w')::text, 'none')") != "none"; i++ {
		if i == 300 {
			t.Fatal("the campaign's queue is not empty after 300 passes")
		}
	}
	sameJSON(t, "campaign chunks", pgtest.MustString(t, s.Conn, `select jsonb_build_array(count(*), sum(size), max(size), min(size))::text
	    from change_chunks where job_id like 'wide-%'`), `[234, 7001, 30, 11]`)
	// The Go face says the same size of a campaign's jobs as the server cuts.
	for _, size := range []int{1, 2, 7, 10, 30, 100, 333, 1000} {
		for _, change := range []bool{false, true} {
			if size > driver.MaxChunkSize && !change {
				continue
			}
			if got, want := driver.CampaignJobTargets(size, change), pgtest.MustInt(t, s.Conn, "select campaign_job_size($1, $2)", size, change); got != want {
				t.Errorf("CampaignJobTargets(%d, %v) = %d, campaign_job_size says %d", size, change, got, want)
			}
		}
	}
	sameJSON(t, "campaign verified", pgtest.MustString(t, s.Conn, "select verify_campaign('wide')::text"),
		`{"name": "wide", "jobs": 3, "sound": true, "targets": 7001, "committed": 7001, "unsound": []}`)
}
