package fleet

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	fleetapi "github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// progressRow is a job's row in job_progress, as (next_index, seconds
// before now) for the newest, mid and base points.
type progressRow struct {
	Next, Mid, Base         int
	AtAgo, MidAgo, BaseAgo  float64
	RateFromJobStatus       *float64
	ProgressedAgoFromStatus *float64
}

// readProgress reads the row and what job_status says of it, on q (inside
// the test's transaction, so now() is the same for every call).
func readProgress(t testing.TB, q pgx.Tx, jobID string) progressRow {
	t.Helper()
	var r progressRow
	var body string
	err := q.QueryRow(ctx, `select p.next_index, p.mid_next_index, p.base_next_index,
			extract(epoch from now() - p.at)::float8, extract(epoch from now() - p.mid_at)::float8,
			extract(epoch from now() - p.base_at)::float8,
			(select s::text from jsonb_array_elements(job_status()) as s where s ->> 'job_id' = $1)
		  from job_progress as p where p.job_id = $1`, jobID).
		Scan(&r.Next, &r.Mid, &r.Base, &r.AtAgo, &r.MidAgo, &r.BaseAgo, &body)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Rate         *float64 `json:"rate"`
		ProgressedAt *string  `json:"progressed_at"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	r.RateFromJobStatus = st.Rate
	if st.ProgressedAt != nil {
		var ago float64
		if err := q.QueryRow(ctx, "select extract(epoch from now() - $1::timestamptz)::float8", *st.ProgressedAt).Scan(&ago); err != nil {
			t.Fatal(err)
		}
		r.ProgressedAgoFromStatus = &ago
	}
	return r
}

func record(t testing.TB, q pgx.Tx, samples string) int {
	t.Helper()
	var n int
	if err := q.QueryRow(ctx, "select record_progress($1::jsonb)", samples).Scan(&n); err != nil {
		t.Fatalf("record_progress(%s): %v", samples, err)
	}
	return n
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// record_progress keeps each job's newest point and two older ones; the
// rate job_status shows runs from the oldest to the newest, and the oldest
// moves up with every minute of progress. Within one transaction now() is
// fixed, so every figure is exact.
func TestSQLRecordProgress(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	newJobs(t, l, "a b", 20, 5)
	for range 3 {
		l.Exec(t, "select run_chunk('a')") // next_index 15: a row up to 15 shows
	}
	tx, err := l.Conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tx.Rollback(ctx); err != nil {
			t.Error(err)
		}
	}()

	if n := record(t, tx, `[{"job_id": "a", "next_index": 5, "ago_ms": 30000}]`); n != 1 {
		t.Fatalf("first sample: %d rows", n)
	}
	if r := readProgress(t, tx, "a"); r.RateFromJobStatus != nil || r.ProgressedAgoFromStatus == nil || !near(*r.ProgressedAgoFromStatus, 30) {
		t.Fatalf("after one point: rate %v, progressed %v s ago; want no rate, 30 s", r.RateFromJobStatus, r.ProgressedAgoFromStatus)
	}
	// Two samples of the same job in one call: the newer one counts.
	if n := record(t, tx, `[{"job_id": "a", "next_index": 8, "ago_ms": 9000}, {"job_id": "a", "next_index": 10, "ago_ms": 0}]`); n != 1 {
		t.Fatalf("second sample: %d rows", n)
	}
	r := readProgress(t, tx, "a")
	if r.Next != 10 || r.Base != 5 || r.Mid != 5 || !near(r.BaseAgo, 30) || r.RateFromJobStatus == nil || !near(*r.RateFromJobStatus, 5.0/30) {
		t.Fatalf("after two points: %+v, rate %v; want 5 ids in 30 s", r, r.RateFromJobStatus)
	}
	// An older sample (another worker's, late) and one that did not move
	// change nothing.
	if n := record(t, tx, `[{"job_id": "a", "next_index": 5, "ago_ms": 10000}]`); n != 0 {
		t.Fatalf("older sample: %d rows", n)
	}
	if n := record(t, tx, `[{"job_id": "a", "next_index": 10, "ago_ms": 0}]`); n != 0 {
		t.Fatalf("same next_index: %d rows", n)
	}

	// A minute past mid: base moves to mid and mid to the new point.
	if _, err := tx.Exec(ctx, `update job_progress set at = now() - interval '10 s', mid_next_index = 5,
		mid_at = now() - interval '70 s', base_next_index = 0, base_at = now() - interval '100 s' where job_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	record(t, tx, `[{"job_id": "a", "next_index": 15, "ago_ms": 0}]`)
	r = readProgress(t, tx, "a")
	if r.Next != 15 || r.Mid != 15 || r.Base != 5 || !near(r.MidAgo, 0) || !near(r.BaseAgo, 70) || !near(*r.RateFromJobStatus, 10.0/70) {
		t.Fatalf("after a minute: %+v, rate %v; want base 5 at 70 s, mid 15 now, rate 10/70", r, *r.RateFromJobStatus)
	}

	// A row ahead of the job (an older job under the same id) shows no
	// rate; the new job's first newer sample starts it over.
	if _, err := tx.Exec(ctx, "update job_progress set at = now() - interval '1 s' where job_id = 'a'"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "update jobs set next_index = 5 where job_id = 'a'"); err != nil {
		t.Fatal(err)
	}
	if st := readProgress(t, tx, "a"); st.RateFromJobStatus != nil || st.ProgressedAgoFromStatus != nil {
		t.Fatalf("a row ahead of its job shows: %+v", st)
	}
	record(t, tx, `[{"job_id": "a", "next_index": 5, "ago_ms": 0}]`)
	if r := readProgress(t, tx, "a"); r.Next != 5 || r.Mid != 5 || r.Base != 5 || r.RateFromJobStatus != nil || !near(*r.ProgressedAgoFromStatus, 0) {
		t.Fatalf("started over: %+v", r)
	}

	// Malformed samples are refused, naming the rule.
	other := pgtest.Connect(t, l.DSN)
	for _, bad := range []string{`{}`, `null`, `[1]`, `[{"job_id": 1, "next_index": 1, "ago_ms": 0}]`,
		`[{"job_id": "a", "next_index": -1, "ago_ms": 0}]`, `[{"job_id": "a", "next_index": 1}]`,
		`[{"job_id": "a", "next_index": 1, "ago_ms": 86400001}]`} {
		_, err := other.Exec(ctx, "select record_progress($1::jsonb)", bad)
		pgtest.WantPgError(t, err, "22023", map[bool]string{true: `samples: must be a list of at most 10000 {"job_id", "next_index", "ago_ms"}, got ` + bad,
			false: `samples: each must be {"job_id": text, "next_index": 0 or more, "ago_ms": 0 to 86400000}`}[bad[0] != '['])
	}
}

// status_page: a page of jobs after an id, whether more follow, and over
// every job the counts by state, the orders left and the oldest progress.
func TestSQLStatusPage(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	newJobs(t, l, "a b c d e", 4, 2)
	l.Exec(t, "select run_chunk('a')")
	l.Exec(t, "select run_chunk('a')") // done
	l.Exec(t, "delete from job_queue where job_id = 'a'")
	l.Exec(t, "select run_chunk('b')") // 2 left
	if _, err := fleetapi.Pause(ctx, l.Conn, driver.JobRef{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	l.Exec(t, `insert into job_progress values ('b', 2, now() - interval '5 minutes', 2, now() - interval '5 minutes',
		0, now() - interval '6 minutes')`)

	first, err := fleetapi.LoadOverview(ctx, l.Conn, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Jobs) != 2 || first.Jobs[0].JobID != "a" || first.Jobs[1].JobID != "b" || !first.More {
		t.Fatalf("first page: %+v", first)
	}
	want := map[string]int{"done": 1, "queued": 3, "paused": 1}
	if !jsonEqual(first.Counts, want) || first.UnfinishedOrders != 2+4+4+4 {
		t.Fatalf("counts %v, unfinished %d; want %v and 14", first.Counts, first.UnfinishedOrders, want)
	}
	// b's last progress, 5 minutes before it was inserted, is older than
	// when d and e were queued; so b is stalled.
	b := first.Jobs[1]
	var at time.Time
	if err := l.Conn.QueryRow(ctx, "select at from job_progress where job_id = 'b'").Scan(&at); err != nil {
		t.Fatal(err)
	}
	if first.OldestProgressAt == nil || !first.OldestProgressAt.Equal(at) || b.ProgressedAt == nil || !b.ProgressedAt.Equal(at) {
		t.Fatalf("oldest progress %v, b progressed at %v; want both %v", first.OldestProgressAt, b.ProgressedAt, at)
	}
	quiet := first.Now.Sub(at).Seconds()
	if b.Rate == nil || !near(*b.Rate, 2.0/60) || b.ETA.Kind != fleetapi.ETAStalled || b.ETA.QuietSeconds == nil ||
		!near(*b.ETA.QuietSeconds, quiet) || quiet < 300 || b.ETA.Seconds != nil {
		t.Fatalf("b: rate %v, eta %+v; want 2 ids a minute, stalled for %v s", b.Rate, b.ETA, quiet)
	}
	rest, err := fleetapi.LoadOverview(ctx, l.Conn, "b", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest.Jobs) != 2 || rest.Jobs[0].JobID != "c" || rest.Jobs[1].JobID != "d" || !rest.More {
		t.Fatalf("second page: %+v", rest.Jobs)
	}
	last, err := fleetapi.LoadOverview(ctx, l.Conn, "d", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(last.Jobs) != 1 || last.Jobs[0].JobID != "e" || last.More {
		t.Fatalf("last page: %+v", last.Jobs)
	}
	all, err := fleetapi.LoadOverview(ctx, l.Conn, "", 0)
	if err != nil || len(all.Jobs) != 5 || all.More {
		t.Fatalf("every job: %v, %v", all, err)
	}
	totals, err := fleetapi.Totals(ctx, l.Conn)
	if err != nil || len(totals.Jobs) != 0 || totals.More || !jsonEqual(totals.Counts, want) {
		t.Fatalf("totals: %+v, %v", totals, err)
	}
	_, err = l.Conn.Exec(ctx, "select status_page(null, -1)")
	pgtest.WantPgError(t, err, "22023", "max_jobs: must be 0 or more (NULL: every job), got -1")
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
