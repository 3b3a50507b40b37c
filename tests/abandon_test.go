package tests

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestAbandonJob (issue 38, item 2): an operator ends an unfinished job
// for good, for a reason kept with who and when. No chunk of it runs
// again (run_chunk, resume and pause refuse it, in those words), status
// shows it abandoned, its committed chunks stay for report and undo, and
// abandoning it again changes nothing. In a campaign, a queued job that is
// abandoned gives its place to the next job that was not abandoned too. A
// finished job, and an empty or long reason, are refused.
func TestAbandonJob(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "a", "acme", 1001, 5, 2)
	queryString(t, s, "select run_chunk('a')::text")
	refuse(t, s, "22023", "reason: must say why the job is abandoned, got an empty text", "select abandon_job('a', ' ')")
	refuse(t, s, "22023", "reason: at most 500 characters, got 501", "select abandon_job('a', repeat('x', 501))")
	me := queryString(t, s, "select session_user::text")
	sameJSON(t, "abandon", queryString(t, s, "select (abandon_job('a', 'superseded by b') - 'at')::text"),
		`{"job_id": "a", "abandoned": true, "by": "`+me+`", "reason": "superseded by b", "next_index": 2, "targets": 5}`)
	at := queryString(t, s, "select abandoned_at::text from job_ends where job_id = 'a'")
	why := "job a: abandoned by " + me + " at " + at + " (superseded by b)"
	refuse(t, s, "CH409", why+"; its remaining targets are never run", "select run_chunk('a')")
	refuse(t, s, "CH409", why+"; nothing to resume", "select resume_job('a')")
	refuse(t, s, "CH409", why+"; nothing to pause", "select pause_job('a')")
	if got := queryString(t, s, "select count(*)::text from job_queue where job_id = 'a'"); got != "0" {
		t.Errorf("queue rows of an abandoned job: %s", got)
	}
	sameJSON(t, "status", queryString(t, s, `select jsonb_build_array(e ->> 'state', e ->> 'pause_reason', e ->> 'paused_by')::text
	    from jsonb_array_elements(job_status()) as e where e ->> 'job_id' = 'a'`), `["abandoned", "abandoned: superseded by b", "`+me+`"]`)
	sameJSON(t, "again", queryString(t, s, "select jsonb_build_array(r -> 'abandoned', r -> 'reason')::text from abandon_job('a', 'another reason') as r"),
		`[false, "superseded by b"]`)
	sameJSON(t, "report", queryString(t, s, "select jsonb_build_array(r -> 'committed', r -> 'remaining')::text from report('a') as r"),
		`[[1001, 1002], [1003, 1004, 1005]]`)
	// Its undo puts back what it committed.
	sameJSON(t, "undo", queryString(t, s, "select (register_undo('a') -> 'targets')::text"), `[1001, 1002]`)
	queryString(t, s, "select run_chunk('a-undo')::text")
	if got := queryString(t, s, "select string_agg(state, ' ' order by id) from orders where id between 1001 and 1005"); got != "pending pending pending pending pending" {
		t.Errorf("orders after the undo of the abandoned job: %s", got)
	}
	refuse(t, s, "CH409", "job a-undo: already done (next_index 2 of 2); nothing to abandon", "select abandon_job('a-undo', 'late')")

	// A campaign of 5 jobs, 2 in the queue: abandoning a waiting job, then a
	// queued one, queues the next job that was not abandoned.
	c := campaignOf300(t)
	q := func(sql string) string { return pgtest.MustString(t, c.Conn, sql) }
	q("select abandon_job('c-000003', 'not needed')::text")
	q("select abandon_job('c-000001', 'not needed')::text")
	if got := q("select string_agg(job_id, ' ' order by job_id) from job_queue"); got != "c-000002 c-000004" {
		t.Errorf("queue after abandoning c-000003 (waiting) and c-000001 (queued): %s", got)
	}
	sameJSON(t, "campaign status", q(`select jsonb_build_array(s -> 'jobs_abandoned', s -> 'abandoned_targets', s -> 'jobs_queued',
	    s -> 'jobs_waiting', s -> 'stalled')::text from campaign_status('c') as s`), `[2, 120, 2, 1, false]`)
}
