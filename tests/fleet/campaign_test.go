package fleet

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// seedCampaignOrders inserts pending orders first..last of tenant acme with
// varied revisions and quantities, and keeps a copy to compare against.
func seedCampaignOrders(t testing.TB, l *lab, first, last int) {
	t.Helper()
	l.Exec(t, `insert into orders (id, tenant, qty, state, revision)
	           select g, 'acme', 1 + g % 9, 'pending', g % 7 from generate_series($1::int, $2::int) g`, first, last)
	l.Exec(t, "create table if not exists orders_before as select * from orders where false")
	l.Exec(t, "insert into orders_before select * from orders where id between $1 and $2", first, last)
}

// writeCampaignFile writes orders first..last as JSON Lines, highest id first.
func writeCampaignFile(t testing.TB, first, last int) string {
	t.Helper()
	var b strings.Builder
	for id := last; id >= first; id-- {
		fmt.Fprintf(&b, "{\"id\": %d, \"revision\": %d, \"qty\": %d}\n", id, id%7, 1+id%9)
	}
	path := filepath.Join(t.TempDir(), "targets.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func campaignJSON[T any](t testing.TB, l *lab, args ...string) T {
	t.Helper()
	r := l.Chunks(t, append([]string{"--json", "campaign"}, args...)...)
	if r.Code != 0 {
		t.Fatalf("%v", r)
	}
	var v T
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("%v: %v", r, err)
	}
	return v
}

// A 10,000-order campaign from a file, drained by three worker processes,
// one SIGKILLed inside a chunk mid-run: every order is changed exactly
// once, and campaign status and report equal the sums over its jobs.
// (10,000 orders are 1,000 chunks, a few seconds on two cores; the
// 100,000-target campaigns are created and reported in
// TestCampaign100000Targets.)
func TestCampaignDrainedWithAKilledWorker(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	const n = 10000
	seedCampaignOrders(t, l, 1, n)
	created := campaignJSON[driver.CampaignCreated](t, l, "create", "--tenant", "acme", "--chunk-size", "10", "--allow-partial",
		"fest", writeCampaignFile(t, 1, n))
	if !created.Created || created.Jobs != 167 || created.Targets != n {
		t.Fatalf("created %+v", created)
	}
	victimApp := l.Name + "-victim"
	l.slowOrdersFor(t, 0, victimApp, 0.3)
	workers := []*clitest.Proc{
		l.startWorker(t, "w1", "--concurrency", "2", "--poll", "200ms"),
		l.startWorkerAs(t, victimApp, "victim", "--concurrency", "1", "--poll", "200ms"),
		l.startWorker(t, "w3", "--concurrency", "2", "--poll", "200ms"),
	}
	for _, w := range workers {
		w.WaitLine(t, 0, 20*time.Second, "msg=ready")
	}
	pgtest.WaitFor(t, 30*time.Second, "the victim inside a chunk after 1,000 orders", func() bool {
		return pgtest.MustInt(t, l.Conn, "select coalesce(sum(next_index), 0)::int from jobs") >= 1000 && l.chunkInFlightAs(t, victimApp)
	})
	workers[1].Signal(t, syscall.SIGKILL)
	if r := workers[1].WaitWithin(t, 10*time.Second); r.Signal != syscall.SIGKILL {
		t.Fatalf("want the victim killed by SIGKILL, got %v", r)
	}
	if l.allDone(t) {
		t.Fatal("the campaign finished before the kill: the test proves nothing")
	}
	pgtest.WaitFor(t, 60*time.Second, "the campaign drained", func() bool {
		return l.allDone(t) && pgtest.MustInt(t, l.Conn, "select count(*) from job_queue") == 0
	})
	stopWorkers(t, workers[0], workers[2])

	// Every order changed exactly once: cancelled, revision + 1, one audit row.
	if got := pgtest.MustString(t, l.Conn, `select format('%s %s %s', count(*), count(*) filter (where o.state = 'cancelled'
	      and o.revision = b.revision + 1 and o.qty = b.qty), (select count(*) || '/' || count(distinct id) from job_audit))
	    from orders_before b join orders o using (id)`); got != "10000 10000 10000/10000" {
		t.Fatalf("orders, changed once, audit rows/ids: %s", got)
	}
	st := campaignJSON[map[string]any](t, l, "status", "fest")
	rep := campaignJSON[map[string]any](t, l, "report", "fest")
	sum := pgtest.MustString(t, l.Conn, `select format('%s %s %s', sum(jsonb_array_length(r->'committed')), sum(jsonb_array_length(r->'drifted')),
	    sum(jsonb_array_length(r->'missing'))) from (select report(job_id) r from campaign_jobs where campaign = 'fest') x`)
	if got := fmt.Sprintf("%v %v %v", st["committed"], rep["drifted_count"], rep["missing_count"]); sum != "10000 0 0" || got != "10000 0 0" ||
		st["targets"] != float64(n) || st["jobs_done"] != float64(167) || rep["matching"] != float64(n) {
		t.Fatalf("sum of job reports %s; campaign status %v; report %v", sum, st, rep)
	}
}

// 100,000 targets from a file and 100,000 from a query (two campaigns in
// one schema): created in one transaction each, with status and report
// over all of them; re-creating from the same file changes nothing.
func TestCampaign100000Targets(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	const n = 100000
	seedCampaignOrders(t, l, 1, 2*n)
	file := writeCampaignFile(t, 1, n)
	args := []string{"create", "--tenant", "acme", "--chunk-size", "10", "--allow-partial"}
	fromFile := campaignJSON[driver.CampaignCreated](t, l, append(args, "from-file", file)...)
	// --from-query runs as the operator: it needs what its query reads.
	l.Exec(t, "grant select on orders to "+pgx.Identifier{l.operator.Name}.Sanitize())
	fromQuery := campaignJSON[driver.CampaignCreated](t, l, append(args, "--from-query",
		fmt.Sprintf("select id, revision, qty from orders where tenant = 'acme' and state = 'pending' and id > %d", n), "from-query")...)
	for _, c := range []driver.CampaignCreated{fromFile, fromQuery} {
		if !c.Created || c.Jobs != 1667 || c.Targets != n {
			t.Fatalf("created %+v", c)
		}
	}
	if got := pgtest.MustString(t, l.Conn, `select format('%s %s %s', count(*), min(jsonb_array_length(targets)), max(jsonb_array_length(targets)))
	    from jobs`); got != "3334 40 60" {
		t.Fatalf("jobs, smallest, largest: %s", got)
	}
	again := campaignJSON[driver.CampaignCreated](t, l, append(args, "from-file", file)...)
	if again.Created || again.Digest != fromFile.Digest {
		t.Fatalf("re-created %+v", again)
	}
	// A few chunks of the query's campaign, and some drift.
	for range 5 {
		pgtest.MustString(t, l.Conn, "select run_next_chunk('w')::text")
	}
	l.Exec(t, "update orders set qty = qty + 1, revision = revision + 1 where id in (select id from job_audit order by id limit 2)")
	st := campaignJSON[driver.CampaignProgress](t, l, "status", "from-file")
	rep := campaignJSON[driver.CampaignDrift](t, l, "report", "from-file")
	if st.Targets != n || st.Committed != 50 || st.Remaining != n-50 || st.Jobs != 1667 || st.JobsQueued != 16 ||
		st.JobsWaiting != 1651 || rep.Committed != 50 || rep.Matching != 48 || fmt.Sprint(rep.Drifted) != "[1 2]" ||
		len(rep.Missing) != 0 {
		t.Fatalf("status %+v\nreport %+v", st, rep)
	}
	q := campaignJSON[driver.CampaignProgress](t, l, "status", "from-query")
	if q.Targets != n || q.Committed != 0 {
		t.Fatalf("status of the query's campaign %+v", q)
	}
}

// SIGKILL of chunks campaign create while its statement runs on the server
// leaves no job, queue row or record of it: COMMIT is only sent after the
// result, and the server rolls back when the connection drops.
func TestCampaignCreateKilledLeavesNothing(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	const n = 200000
	seedCampaignOrders(t, l, 1, n)
	file := writeCampaignFile(t, 1, n)
	p := clitest.Start(t, clitest.Options{Name: "create"}, append(l.Globals(), "campaign", "create", "--tenant", "acme", "--chunk-size", "10", "--allow-partial", "big", file)...)
	pgtest.WaitFor(t, 30*time.Second, "campaign_create running on the server", func() bool {
		return pgtest.MustInt(t, l.Conn, `select count(*) from pg_stat_activity where application_name = $1 and state = 'active'
		    and query like '%campaign_create%'`, l.Name) > 0
	})
	p.Signal(t, syscall.SIGKILL)
	if r := p.WaitWithin(t, 10*time.Second); r.Signal != syscall.SIGKILL {
		t.Fatalf("want create killed by SIGKILL, got %v", r)
	}
	pgtest.WaitFor(t, 30*time.Second, "the killed client's session to end", func() bool {
		return pgtest.MustInt(t, l.Conn, "select count(*) from pg_stat_activity where application_name = $1", l.Name) == 0
	})
	if got := pgtest.MustString(t, l.Conn, `select format('%s %s %s %s', (select count(*) from jobs), (select count(*) from job_queue),
	    (select count(*) from campaigns), (select count(*) from campaign_jobs))`); got != "0 0 0 0" {
		t.Fatalf("jobs, queue rows, campaigns, memberships after the kill: %s", got)
	}
	// The same create then succeeds.
	if c := campaignJSON[driver.CampaignCreated](t, l, "create", "--tenant", "acme", "--chunk-size", "10", "--allow-partial", "big", file); !c.Created || c.Targets != n {
		t.Fatalf("created %+v", c)
	}
}

// --from-query cannot step out of its READ ONLY transaction, even when the
// DSN asks pgx for the simple protocol (default_query_exec_mode=
// simple_protocol), which would send "select ...; commit; delete ..." as
// three statements: the query goes through the extended protocol, which
// takes one statement. Several are refused naming the flag (exit 2), before
// anything is written; one write is refused by the READ ONLY transaction.
func TestFromQueryIsOneReadOnlyStatement(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	seedCampaignOrders(t, l, 1, 20)
	// The operator may delete orders: only the transaction stands in the way.
	l.Exec(t, "grant select, delete on orders to "+pgx.Identifier{l.operator.Name}.Sanitize())
	orders := pgx.Identifier{l.Name, "orders"}.Sanitize()
	create := append(l.simpleProtocol(), "--json", "campaign", "create", "--tenant", "acme", "--chunk-size", "10", "--allow-partial", "--from-query")
	for _, tc := range []struct {
		query string
		code  int
		want  string
	}{
		{"select 1999 as id, 0 as revision, 1 as qty; commit; delete from " + orders + " where id = 20", 2,
			"chunks: --from-query: invalid: query: must be one statement, got several"},
		{"select 1999 as id, 0 as revision, 1 as qty; commit", 2, "chunks: --from-query: invalid: query: must be one statement, got several"},
		{"delete from " + orders + " where id = 20 returning id, revision, qty", 1,
			"chunks: --from-query: ERROR: cannot execute DELETE in a read-only transaction (SQLSTATE 25006)"},
	} {
		if r := clitest.Run(t, append(create, tc.query, "escape")...); r.Code != tc.code || !strings.HasPrefix(r.Stderr, tc.want) {
			t.Errorf("want exit %d and %q, got %v", tc.code, tc.want, r)
		}
	}
	if got := pgtest.MustString(t, l.Conn, `select format('%s %s %s', (select count(*) from orders), (select count(*) from campaigns),
	    (select count(*) from jobs))`); got != "20 0 0" {
		t.Fatalf("orders, campaigns, jobs after the refusals: %s", got)
	}
	// One select is fine under the same DSN.
	r := clitest.Run(t, append(create, "select id, revision, qty from "+orders, "fest")...)
	if r.Code != 0 || !strings.Contains(r.Stdout, `"targets":20`) {
		t.Fatalf("%v", r)
	}
}
