package tests

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestArchiveJobs (issue 38, item 2): the jobs that ended (finished or
// abandoned) longer ago than asked are archived, once, with who and when;
// an unfinished one never is. They leave job_status and status_page's
// list and counts, and report and inspect still answer for them. A
// campaign is archived whole once every job of it ended.
func TestArchiveJobs(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	q := func(sql string, args ...any) string { return pgtest.MustString(t, s.Conn, sql, args...) }
	registerJob(t, s, "done", "acme", 1, 2, 2)
	q("select run_chunk('done')::text")
	registerJob(t, s, "ab", "acme", 11, 4, 2)
	q("select abandon_job('ab', 'superseded')::text")
	registerJob(t, s, "open", "acme", 21, 4, 2)

	refuse(t, s, "22023", "finished_before: must be 0 or more, got -01:00:00", "select archive_jobs('-1 hour')")
	sameJSON(t, "an hour ago", q("select archive_jobs('1 hour')::text"), `{"archived": 0, "jobs": [], "more": false}`)
	sameJSON(t, "now", q("select archive_jobs('0')::text"), `{"archived": 2, "jobs": ["ab", "done"], "more": false}`)
	sameJSON(t, "again", q("select archive_jobs('0')::text"), `{"archived": 0, "jobs": [], "more": false}`)
	me := q("select session_user::text")
	if got := q("select string_agg(job_id || ' ' || archived_by, ', ' order by job_id) from job_archive"); got != "ab "+me+", done "+me {
		t.Errorf("job_archive: %s", got)
	}
	sameJSON(t, "job_status", q("select jsonb_agg(e -> 'job_id')::text from jsonb_array_elements(job_status()) as e"), `["open"]`)
	sameJSON(t, "status_page", q("select jsonb_build_array(p -> 'counts', jsonb_array_length(p -> 'jobs'))::text from status_page(null, null) as p"),
		`[{"queued": 1}, 1]`)
	sameJSON(t, "report", q("select (report('done') -> 'matching')::text"), `[1, 2]`)
	sameJSON(t, "inspect", q("select (inspect_job('ab') -> 'next_index')::text"), `0`)

	c := campaignOf300(t)
	cq := func(sql string) string { return pgtest.MustString(t, c.Conn, sql) }
	refuse(t, c, "CH409", "campaign c: 5 jobs are not finished nor abandoned; only an ended campaign is archived", "select campaign_archive('c')")
	refuse(t, c, "CH409", "campaign nope: not found", "select campaign_archive('nope')")
	for range 40 {
		cq("select coalesce(run_next_chunk('w')::text, '')")
	}
	sameJSON(t, "campaign archive", cq("select campaign_archive('c')::text"), `{"name": "c", "archived": 5}`)
	sameJSON(t, "campaign archive again", cq("select campaign_archive('c')::text"), `{"name": "c", "archived": 0}`)
	sameJSON(t, "campaign status", cq("select jsonb_build_array(s -> 'committed', s -> 'jobs_done')::text from campaign_status('c') as s"), `[300, 5]`)
	sameJSON(t, "status after", cq("select (status_page(null, null) -> 'counts')::text"), `{}`)
}
