package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// campaignLines is JSON Lines of targets first..first+n-1 (revision 3, qty 2), in
// descending id order so that the campaign has to sort them.
func campaignLines(first, n int) string {
	var b strings.Builder
	for i := n - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "{\"id\": %d, \"revision\": 3, \"qty\": 2}\n", first+i)
	}
	return b.String()
}

// runWholeCampaign runs every chunk of campaign NAME, job after job in seq
// order, in one statement, as run_chunk would one by one.
func runWholeCampaign(t testing.TB, s *pgtest.Schema, name string) {
	t.Helper()
	// A DO block takes no parameters: the name travels as a session setting.
	s.Exec(t, "select set_config('chunks_test.campaign', $1, false)", name)
	s.Exec(t, `do $$
	           declare v_job text;
	           begin
	             for v_job in select cj.job_id from campaign_jobs as cj
	                           where cj.campaign = current_setting('chunks_test.campaign') order by cj.seq loop
	               loop exit when (run_chunk(v_job) ->> 'done')::boolean; end loop;
	             end loop;
	           end $$`)
}

func readTargets(t testing.TB, text string) driver.CampaignTargets {
	t.Helper()
	ct, err := driver.ReadCampaignTargets(strings.NewReader(text))
	if err != nil {
		t.Fatalf("read targets: %v", err)
	}
	return ct
}

// A campaign is its targets sorted by id, split into jobs of whole chunks
// (60 targets at chunk size 10), named NAME-000001...; the first
// queue_window jobs are queued; re-creating it changes nothing; a
// different approval under the name is a conflict naming the difference.
func TestCampaignCreateSplitsAndIsIdempotent(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	seedOrders(t, s, "acme", 1, 1000)
	listener := pgtest.Connect(t, s.DSN)
	channel := queryString(t, s, "select queue_channel()")
	if _, err := listener.Exec(ctx, "listen "+channel); err != nil {
		t.Fatal(err)
	}
	spec := driver.CampaignSpec{Name: "fest", Tenant: "acme", ChunkSize: 10, QueueWindow: 4}
	got, err := driver.CreateCampaign(ctx, s.Conn, spec, readTargets(t, campaignLines(1, 1000)))
	if err != nil {
		t.Fatal(err)
	}
	// Notifications arrive in commit order: everything before the sentinel
	// came from the campaign's transaction.
	s.Exec(t, "select pg_notify($1, 'sentinel')", channel)
	var heard []string
	for {
		n, err := listener.WaitForNotification(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n.Payload == "sentinel" {
			break
		}
		heard = append(heard, n.Payload)
	}
	if fmt.Sprint(heard) != "[fest]" {
		t.Fatalf("notifications of the create: %q, want one", heard)
	}
	if !got.Created || got.Jobs != 17 || got.Targets != 1000 || len(got.Digest) != 64 {
		t.Fatalf("created %+v", got)
	}
	if jobs := queryString(t, s, `select string_agg(job_id || ':' || jsonb_array_length(targets) || ':' || (targets->0->>'id'), ',' order by job_id) from jobs`); !strings.HasPrefix(jobs, "fest-000001:60:1,fest-000002:60:61,") || !strings.HasSuffix(jobs, ",fest-000017:40:961") {
		t.Fatalf("jobs %s", jobs)
	}
	if q := queryString(t, s, `select string_agg(job_id, ',' order by job_id) from job_queue`); q != "fest-000001,fest-000002,fest-000003,fest-000004" {
		t.Fatalf("queue %s", q)
	}
	if rec := queryString(t, s, `select format('%s %s %s %s %s %s', tenant, chunk_size, job_count, target_count, released, created_at is not null) from campaigns`); rec != "acme 10 17 1000 4 t" {
		t.Fatalf("campaign record %s", rec)
	}
	before := state(t, s)
	again, err := driver.CreateCampaign(ctx, s.Conn, spec, readTargets(t, "["+strings.ReplaceAll(strings.TrimSpace(campaignLines(1, 1000)), "\n", ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Created || again.Digest != got.Digest || again.Jobs != 17 {
		t.Fatalf("re-created %+v", again)
	}
	if after := state(t, s); after != before {
		t.Fatal("re-creating an identical campaign changed the data")
	}

	changed := strings.Replace(campaignLines(1, 1000), `{"id": 500, "revision": 3, "qty": 2}`, `{"id": 500, "revision": 4, "qty": 2}`, 1)
	for _, tc := range []struct {
		spec    driver.CampaignSpec
		targets string
		msg     string
	}{
		{spec, changed, `campaign fest: target 500 (sorted by id) is {"id": 500, "qty": 2, "revision": 3}, this approval has {"id": 500, "revision": 4, "qty": 2}`},
		{spec, campaignLines(1, 999), "campaign fest: it has 1000 targets, this approval only 999"},
		{driver.CampaignSpec{Name: "fest", Tenant: "other", ChunkSize: 10}, campaignLines(1, 1000), "campaign fest: tenant is acme, this approval has other"},
		{driver.CampaignSpec{Name: "fest", Tenant: "acme", ChunkSize: 5}, campaignLines(1, 1000), "campaign fest: chunk_size is 10, this approval has 5"},
	} {
		_, err := driver.CreateCampaign(ctx, s.Conn, tc.spec, readTargets(t, tc.targets))
		if !errors.Is(err, driver.ErrConflict) || !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("want conflict %q, got %v", tc.msg, err)
		}
	}
	if after := state(t, s); after != before {
		t.Fatal("a refused campaign changed the data")
	}
	// A job id the campaign needs, held by a plain job, is a conflict too.
	registerJob(t, s, "other-000002", "acme", 2001, 3, 1)
	seedOrders(t, s, "acme", 3001, 100)
	_, err = driver.CreateCampaign(ctx, s.Conn, driver.CampaignSpec{Name: "other", Tenant: "acme", ChunkSize: 10}, readTargets(t, campaignLines(3001, 100)))
	if !errors.Is(err, driver.ErrConflict) || !strings.Contains(err.Error(), "campaign other: job other-000002 already exists and is not part of it") {
		t.Fatalf("taken id: %v", err)
	}
	if n := queryString(t, s, "select count(*) from campaigns where name = 'other'"); n != "0" {
		t.Fatalf("the refused campaign left %s records", n)
	}
}

// Bad input is refused before anything is written, naming the line or
// index; the SQL function refuses the same on its own.
func TestCampaignBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, msg string }{
		{"", "invalid: targets: the approval is empty"},
		{"  \n\n", "invalid: targets: the approval is empty"},
		{"[]", "invalid: targets: the approval is empty"},
		{"{\"id\": 1, \"revision\": 0, \"qty\": 1}\n{\"id\": 2, \"revision\": 0, \"qty\": 1.0}\n", "invalid: line 2.qty: must be an integer, got 1.0"},
		{"{\"id\": 1, \"revision\": 0, \"qty\": 1}\n\n{\"id\": 2, \"revision\": 0, \"qty\": 1}\n{\"id\": 1, \"revision\": 0, \"qty\": 1}\n", "invalid: line 4: duplicate id 1 (first at line 1)"},
		{`[{"id": 1, "revision": 0, "qty": 1}, {"id": 2, "revision": 0, "qty": 1, "qty": 1}]`, `invalid: targets[1]: duplicate key "qty"`},
		{`[{"id": 7, "revision": 0, "qty": 1}, {"id": 2, "revision": 0, "qty": 1}, {"id": 7, "revision": 1, "qty": 1}]`, "invalid: targets[2]: duplicate id 7 (first at targets[0])"},
		{`[{"id": 1, "revision": 0, "qty": 1001}]`, "invalid: targets[0].qty: must be between 1 and 1000, got 1001"},
		{`[{"id": 1, "revision": 0, "qty": 1}] []`, "invalid: targets: must be a single JSON array, found more after it"},
		{`[{"id": 1, "revision": 0, "qty": 1},]`, "invalid: targets[1]: invalid JSON: a missing value"},
		{`[{"id": 1, "revision": 0, "qty": 1}`, "invalid: targets: invalid JSON: unexpected end of input"},
		{`[{"id": 1, "revision": 0, "qty": 1} {"id": 2, "revision": 0, "qty": 1}]`, "invalid: targets[0]: must be a single JSON value, found more after it"},
		{`[{"id": 1, "revision": 0, "qty": 1, "x": ["a\"],", {"b": "}"}]}]`, "invalid: targets[0]: must have exactly the keys id, revision, qty, got id, revision, qty, x"},
		{"[{\"id\": 1, \"revision\": 0, \"qty\": 1, \"x\": \"\xff\"}]", "invalid: targets[0]: is not valid UTF-8"},
		{"[{\"id\": 1, \"revision\": 0, \"qty\": 1, \"x\": \"" + strings.Repeat("y", 4096) + "\"}]", "invalid: targets[0]: longer than 4096 bytes"},
		{"{\"id\": 1, \"revision\": 0}\n", "invalid: line 1: must have exactly the keys id, revision, qty, got id, revision"},
	} {
		_, err := driver.ReadCampaignTargets(strings.NewReader(tc.in))
		if !errors.Is(err, driver.ErrInvalid) || err.Error() != tc.msg {
			t.Errorf("%q: want %q, got %v", tc.in, tc.msg, err)
		}
	}
	pretty := readTargets(t, "\n[\n  {\"id\": 9,\n   \"revision\": 0, \"qty\": 1} ,\n\t{ \"id\" : 8, \"revision\": 2, \"qty\": 3 }\r\n]\n\n")
	if want := []driver.Target{{ID: 9, Revision: 0, Qty: 1}, {ID: 8, Revision: 2, Qty: 3}}; !slices.Equal(pretty.Targets, want) {
		t.Errorf("a pretty-printed array: got %+v, want %+v", pretty.Targets, want)
	}
	big := strings.NewReader("[" + strings.Repeat(" ", driver.MaxCampaignInput) + "]")
	if _, err := driver.ReadCampaignTargets(big); !errors.Is(err, driver.ErrInvalid) || !strings.Contains(err.Error(), "larger than 128 MiB") {
		t.Errorf("oversized input: %v", err)
	}

	s := pgtest.NewSchema(t)
	call := "select campaign_create($1, 'acme', 10, $2::int[], $3::int[], $4::int[])::text"
	refuse(t, s, "22023", "targets[2]: duplicate id 5 (first at targets[0])", call, "c", []int32{5, 6, 5}, []int32{0, 0, 0}, []int32{1, 1, 1})
	refuse(t, s, "22023", "targets[1]: qty: must be between 1 and 1000, got 0", call, "c", []int32{5, 6}, []int32{0, 0}, []int32{1, 0})
	refuse(t, s, "22023", "targets: the approval is empty", call, "c", []int32{}, []int32{}, []int32{})
	refuse(t, s, "22023", "name: must be at most 57 characters (job ids add -NNNNNN), got 58", call, strings.Repeat("n", 58), []int32{5}, []int32{0}, []int32{1})
	if n := queryString(t, s, "select count(*) from campaigns"); n != "0" {
		t.Fatalf("%s campaign records after refusals", n)
	}
}

// Campaign status and report equal the sums of their jobs' job_status and
// report, and pause/resume act on every queued job of the campaign.
func TestCampaignStatusReportPause(t *testing.T) {
	t.Parallel()
	s := campaignOf300(t)
	// Three passes of the fleet: c-000001 gets chunks 1 and 3, c-000002 chunk 2.
	for range 3 {
		queryString(t, s, "select run_next_chunk('w')::text")
	}
	s.Exec(t, "update orders set qty = 3, revision = revision + 1 where id in (5, 65)")
	s.Exec(t, "delete from orders where id = 12")
	st, err := driver.CampaignStatus(ctx, s.Conn, "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Targets != 300 || st.Committed != 30 || st.Remaining != 270 || st.Jobs != 5 || st.JobsQueued != 2 ||
		st.JobsWaiting != 3 || st.JobsDone != 0 || st.RatePerSecond != nil || st.ETASeconds != nil || st.Stalled {
		t.Fatalf("status %+v (no fleet worker sampled it: no rate)", st)
	}
	r, err := driver.CampaignReport(ctx, s.Conn, "c")
	if err != nil {
		t.Fatal(err)
	}
	if r.Committed != 30 || r.Matching != 27 || fmt.Sprint(r.Drifted) != "[5 65]" || fmt.Sprint(r.Missing) != "[12]" || r.Remaining != 270 {
		t.Fatalf("report %+v", r)
	}
	var sum struct{ Committed, Drifted, Missing int }
	if err := json.Unmarshal([]byte(queryString(t, s, `select json_build_object('committed', sum(jsonb_array_length(r->'committed')),
		'drifted', sum(jsonb_array_length(r->'drifted')), 'missing', sum(jsonb_array_length(r->'missing')))::text
		from (select report(job_id) as r from campaign_jobs where campaign = 'c') x`)), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Committed != r.Committed || sum.Drifted != r.DriftedCount || sum.Missing != r.MissingCount {
		t.Fatalf("sum of job reports %+v, campaign report %+v", sum, r)
	}

	// The preflight over the 270 remaining targets: two cannot take their change.
	s.Exec(t, "update orders set revision = revision + 1 where id = 100")
	s.Exec(t, "delete from orders where id = 250")
	before := state(t, s)
	ch, err := driver.CheckCampaign(ctx, s.Conn, "c", 1)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Remaining != 270 || ch.OK != 268 || ch.Problems != 2 || len(ch.Listed) != 1 || ch.Listed[0].ID != 100 ||
		ch.Listed[0].Problem != "order 100: revision is 4, approved 3" {
		t.Fatalf("check %+v", ch)
	}
	if after := state(t, s); after != before {
		t.Fatal("campaign check changed the data")
	}

	p, err := driver.PauseCampaign(ctx, s.Conn, "c")
	if err != nil || !p.Changed || p.Jobs != 2 {
		t.Fatalf("pause %+v %v", p, err)
	}
	if got := queryString(t, s, "select coalesce(run_next_chunk('w')::text, 'none')"); got != "none" {
		t.Fatalf("a pass ran %s in a paused campaign", got)
	}
	if p, err := driver.PauseCampaign(ctx, s.Conn, "c"); err != nil || p.Changed {
		t.Fatalf("second pause %+v %v", p, err)
	}
	res, err := driver.ResumeCampaign(ctx, s.Conn, "c")
	if err != nil || !res.Changed || res.Jobs != 2 {
		t.Fatalf("resume %+v %v", res, err)
	}
	if got := queryString(t, s, "select run_next_chunk('w')->>'job_id'"); !strings.HasPrefix(got, "c-00000") {
		t.Fatalf("after resume a pass ran %s", got)
	}
	if _, err := driver.CampaignStatus(ctx, s.Conn, "nope"); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("unknown campaign: %v", err)
	}
}

// A campaign's report and status judge its committed targets by their audit
// rows (report's rule for every change): an audit row tampered with to name
// other orders is judged by the order it names, one that still matches,
// one that drifted, one that is missing.
func TestCampaignReportAuditOutsideTheRange(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	seedOrders(t, s, "acme", 1, 400)
	spec := driver.CampaignSpec{Name: "c", Tenant: "acme", ChunkSize: 10, QueueWindow: 3}
	if _, err := driver.CreateCampaign(ctx, s.Conn, spec, readTargets(t, campaignLines(1, 180))); err != nil {
		t.Fatal(err)
	}
	runWholeCampaign(t, s, "c")
	// The middle job's first three audit rows (ids 61, 62, 63) now name
	// orders 350 (made to look the way the job left it), 300 and 500 (none).
	s.Exec(t, `update job_audit set id = case ordinal when 0 then 350 when 1 then 300 else 500 end
	            where job_id = (select job_id from campaign_jobs where campaign = 'c' and seq = 1) and ordinal < 3`)
	s.Exec(t, "update orders set state = 'cancelled', revision = 4 where id = 350")
	r, err := driver.CampaignReport(ctx, s.Conn, "c")
	if err != nil {
		t.Fatal(err)
	}
	if r.Committed != 180 || r.Matching != 178 || fmt.Sprint(r.Drifted) != "[300]" || fmt.Sprint(r.Missing) != "[500]" {
		t.Fatalf("report %+v", r)
	}
	st, err := driver.CampaignStatus(ctx, s.Conn, "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Committed != 180 {
		t.Fatalf("status %+v", st)
	}
	// Status reads progress, never the rows: drift is report's alone.
	if got := queryString(t, s, "select (campaign_status('c') ? 'drift')::text"); got != "false" {
		t.Errorf("campaign_status has drift: %s", got)
	}
}

// A campaign's report checks each job as report does: a job of
// the campaign that is no longer its approval is a conflict, in report's
// words, and chunks status shows no drift for it (report would refuse it).
// campaign status, which reads no row, still answers.
func TestCampaignReportRefusesAJobNotItsApproval(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	seedOrders(t, s, "acme", 1, 200)
	spec := driver.CampaignSpec{Name: "c", Tenant: "acme", ChunkSize: 10, QueueWindow: 3}
	if _, err := driver.CreateCampaign(ctx, s.Conn, spec, readTargets(t, campaignLines(1, 180))); err != nil {
		t.Fatal(err)
	}
	runWholeCampaign(t, s, "c")
	job := queryString(t, s, "select job_id from campaign_jobs where campaign = 'c' and seq = 1")
	s.Exec(t, "update orders set qty = 9 where id = 1")
	if got := queryString(t, s, "select e ->> 'drift' from jsonb_array_elements(job_status()) as e where e ->> 'job_id' = $1", job); got != "0" {
		t.Fatalf("drift of %s before: %s", job, got)
	}
	s.Exec(t, "update jobs set chunk_size = 5 where job_id = $1", job)
	want := "job " + job + ": the stored job is no longer the registered approval: its chunk_size is 5, registered 10"
	refuse(t, s, "CH409", want, "select campaign_report('c')")
	if got := queryString(t, s, "select campaign_status('c') ->> 'committed'"); got != "180" {
		t.Errorf("campaign status of a campaign report refuses: committed %s, want 180", got)
	}
	if got := queryString(t, s, "select (e -> 'drift')::text from jsonb_array_elements(job_status()) as e where e ->> 'job_id' = $1", job); got != "null" {
		t.Fatalf("drift of %s, which report refuses: %s", job, got)
	}
	// The other jobs' drift is still counted, one statement for all of them.
	first := queryString(t, s, "select job_id from campaign_jobs where campaign = 'c' and seq = 0")
	if got := queryString(t, s, "select e ->> 'drift' from jsonb_array_elements(job_status()) as e where e ->> 'job_id' = $1", first); got != "1" {
		t.Fatalf("drift of %s: %s", first, got)
	}
}

// Fairness: a campaign of 4,000 jobs keeps at most queue_window (16) of
// them in the queue, so a small job registered after it runs its first
// chunk within 17 passes of the fleet, and all three of its chunks within
// 3 × 17, instead of after the 4,000 jobs ahead of it. Each job that
// finishes releases the campaign's next one, so the campaign still drains.
func TestCampaignDoesNotStarveASmallJob(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	const n = 4000 * 60 // 4,000 jobs of 60 targets at chunk size 10
	seedOrders(t, s, "acme", 1, n)
	var created string
	if err := s.Conn.QueryRow(ctx, `select campaign_create('big', 'acme', 10, array_agg(g), array_agg(3), array_agg(2))::text
	    from generate_series(1, $1::int) g`, n).Scan(&created); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "created", created, `{"name": "big", "created": true, "jobs": 4000, "targets": 240000, "digest": "`+
		queryString(t, s, "select digest from campaigns")+`"}`)
	// The campaign's first chunks run: the fleet is busy with it.
	for range 40 {
		queryString(t, s, "select run_next_chunk('w')->>'job_id'")
	}
	registerJob(t, s, "small", "acme", n+1, 3, 1)
	if q := queryString(t, s, "select count(*) from job_queue"); q != "17" {
		t.Fatalf("queue holds %s rows, want the campaign's 16 and the small job", q)
	}
	first, last := 0, 0
	for pass := 1; pass <= 3*17 && last == 0; pass++ {
		var job string
		var done bool
		if err := s.Conn.QueryRow(ctx, "select r->>'job_id', (r->>'done')::boolean from run_next_chunk('w') r").Scan(&job, &done); err != nil {
			t.Fatal(err)
		}
		if job == "small" && first == 0 {
			first = pass
		}
		if job == "small" && done {
			last = pass
		}
	}
	if first == 0 || first > 17 || last == 0 {
		t.Fatalf("the small job's first chunk ran at pass %d, its last at %d (0: not within 51 passes)", first, last)
	}
	t.Logf("small job: first chunk at pass %d, done at pass %d, behind a campaign of 4,000 jobs", first, last)
	// The small job is gone from the queue; the campaign still holds 16
	// rows, one for each job released and not finished.
	released := queryString(t, s, "select released from campaigns")
	done := queryString(t, s, "select count(*) from campaign_jobs cj join jobs j using (job_id) where j.next_index = 60")
	if q := queryString(t, s, "select count(*) from job_queue"); q != "16" || released != fmt.Sprint(16+atoi(t, done)) {
		t.Fatalf("queue %s rows, released %s, %s campaign jobs done", q, released, done)
	}
}

func atoi(t testing.TB, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The undo of a paused campaign is one campaign of restore jobs built from
// every job's committed part: drifted orders are left alone, the rest go
// back to pending (revision + 1 again); creating it again changes nothing,
// and an undo is not undone.
func TestCampaignUndo(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	seedOrders(t, s, "acme", 1, 300)
	if _, err := driver.CreateCampaign(ctx, s.Conn, driver.CampaignSpec{Name: "c", Tenant: "acme", ChunkSize: 10, QueueWindow: 2},
		readTargets(t, campaignLines(1, 300))); err != nil {
		t.Fatal(err)
	}
	for range 13 { // c-000001 done (6 chunks), c-000002 at 6 of 6 too, c-000003 1 chunk
		queryString(t, s, "select run_next_chunk('w')::text")
	}
	s.Exec(t, "update orders set qty = 9, revision = revision + 1 where id = 7")
	if _, err := driver.UndoCampaign(ctx, s.Conn, "c", ""); !errors.Is(err, driver.ErrConflict) || !strings.Contains(err.Error(), "can still make progress") {
		t.Fatalf("undo of a running campaign: %v", err)
	}
	if _, err := driver.PauseCampaign(ctx, s.Conn, "c"); err != nil {
		t.Fatal(err)
	}
	u, err := driver.UndoCampaign(ctx, s.Conn, "c", "")
	if err != nil {
		t.Fatal(err)
	}
	committed := atoi(t, queryString(t, s, "select sum(next_index) from jobs"))
	if !u.Created || u.Name != "c-undo" || u.Jobs != 3 || u.Targets != committed-1 || fmt.Sprint(u.Drifted) != "[7]" || committed != 130 {
		t.Fatalf("undo %+v (campaign committed %d)", u, committed)
	}
	if got := queryString(t, s, "select string_agg(k.job_id || '>' || k.undoes, ',' order by k.job_id) from job_kind k"); got != "c-undo-000001>c-000001,c-undo-000002>c-000002,c-undo-000003>c-000003" {
		t.Fatalf("undo jobs %s", got)
	}
	// The undo campaign's preflight judges its targets as its chunks will:
	// each order must still be cancelled, at the revision the undone job left.
	s.Exec(t, "update orders set state = 'paid', revision = revision + 1 where id = 8")
	if c, err := driver.CheckCampaign(ctx, s.Conn, "c-undo", 10); err != nil || c.Remaining != 129 || c.OK != 128 || c.Problems != 1 ||
		len(c.Listed) != 1 || c.Listed[0].ID != 8 || c.Listed[0].Problem != "order 8: state is paid" {
		t.Fatalf("check of the undo campaign: %+v, %v", c, err)
	}
	s.Exec(t, "update orders set state = 'cancelled', revision = revision - 1 where id = 8")
	for range 40 {
		queryString(t, s, "select coalesce(run_next_chunk('w')::text, '')")
	}
	st, err := driver.CampaignStatus(ctx, s.Conn, "c-undo")
	if err != nil {
		t.Fatal(err)
	}
	if st.Committed != 129 || st.JobsDone != 3 {
		t.Fatalf("undo status %+v", st)
	}
	// Each report says how the two are tied, as a job's lineage does.
	if r, err := driver.CampaignReport(ctx, s.Conn, "c"); err != nil || r.UndoneBy == nil || *r.UndoneBy != "c-undo" || r.Undoes != nil ||
		r.Committed != 130 || r.Matching != 0 || r.DriftedCount != 130 {
		t.Fatalf("the undone campaign's report: %+v, %v", r, err)
	}
	if r, err := driver.CampaignReport(ctx, s.Conn, "c-undo"); err != nil || r.Undoes == nil || *r.Undoes != "c" || r.UndoneBy != nil ||
		r.Committed != 129 || r.Matching != 129 {
		t.Fatalf("the undo's report: %+v, %v", r, err)
	}
	if got := queryString(t, s, "select jsonb_build_array(campaign_report('c') -> 'undone_by', campaign_report('c-undo') -> 'undoes')::text"); got != `["c-undo", "c"]` {
		t.Fatalf("campaign_report's undone_by and undoes: %s", got)
	}
	if got := queryString(t, s, `select format('%s %s %s', count(*) filter (where state = 'pending' and revision = 5),
	    count(*) filter (where state = 'pending' and revision = 3), count(*) filter (where state = 'cancelled' and qty = 9 and id = 7))
	    from orders`); got != "129 170 1" {
		t.Fatalf("restored (pending, revision 5), never touched (3), the drifted one left cancelled: %s", got)
	}
	again, err := driver.UndoCampaign(ctx, s.Conn, "c", "")
	if err != nil || again.Created || again.Jobs != 3 {
		t.Fatalf("undo again %+v %v", again, err)
	}
	if _, err := driver.UndoCampaign(ctx, s.Conn, "c-undo", ""); !errors.Is(err, driver.ErrConflict) || !strings.Contains(err.Error(), "campaign c-undo: is the undo of c") {
		t.Fatalf("undo of an undo: %v", err)
	}
}

// TestCampaignRecentRateAndStall (issue 38, item 4): a campaign's rate is
// over about the last minute, from the samples the fleet's heartbeats
// take (record_progress: at most one a campaign every 5 s), not the
// average since creation; with no job running or queued (the campaign
// paused) it is stalled and has no ETA.
func TestCampaignRecentRateAndStall(t *testing.T) {
	t.Parallel()
	s := campaignOf300(t)
	// The campaign was made an hour ago, and a sample 30 s ago saw 0 committed.
	s.Exec(t, "update campaigns set created_at = now() - interval '1 hour' where name = 'c'")
	s.Exec(t, "insert into campaign_progress values ('c', clock_timestamp() - interval '30 seconds', 0)")
	for range 6 {
		queryString(t, s, "select run_next_chunk('w')::text")
	}
	// A heartbeat of a worker that ran c-000001 samples the campaign once.
	for range 2 {
		queryString(t, s, `select record_progress(jsonb_build_array(jsonb_build_object('job_id', 'c-000001', 'next_index', next_index, 'ago_ms', 0)))::text
		  from jobs where job_id = 'c-000001'`)
	}
	if got := queryString(t, s, "select string_agg(committed::text, ' ' order by at) from campaign_progress where campaign = 'c'"); got != "0 60" {
		t.Errorf("samples: %s, want 0 then 60 (one a heartbeat at most every 5 s)", got)
	}
	st, err := driver.CampaignStatus(ctx, s.Conn, "c")
	if err != nil {
		t.Fatal(err)
	}
	// 60 in about 30 s: about 2/s (the average since creation would be 0.0).
	if st.RatePerSecond == nil || *st.RatePerSecond < 1.5 || *st.RatePerSecond > 2.1 || st.ETASeconds == nil ||
		*st.ETASeconds < 240/2.1 || *st.ETASeconds > 240/1.5 || st.Stalled {
		t.Fatalf("status %+v", st)
	}
	// Paused: stalled (the waiting jobs are never released), no ETA, though the rate is known.
	s.Exec(t, "select campaign_pause('c')")
	if st, err = driver.CampaignStatus(ctx, s.Conn, "c"); err != nil || !st.Stalled || st.ETASeconds != nil || st.RatePerSecond == nil {
		t.Fatalf("paused status %+v, %v", st, err)
	}
}

// campaignOf300 is a schema with 300 pending orders of acme in campaign c
// (chunk size 10, jobs of 60, queue window 2).
func campaignOf300(t *testing.T) *pgtest.Schema {
	t.Helper()
	s := pgtest.NewSchema(t)
	seedOrders(t, s, "acme", 1, 300)
	spec := driver.CampaignSpec{Name: "c", Tenant: "acme", ChunkSize: 10, QueueWindow: 2}
	if _, err := driver.CreateCampaign(ctx, s.Conn, spec, readTargets(t, campaignLines(1, 300))); err != nil {
		t.Fatal(err)
	}
	return s
}
