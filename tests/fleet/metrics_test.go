package fleet

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// chunks worker --http: /metrics counts what the database says happened.
// Committed chunks and changed orders equal what the audit says was
// committed, conflicts equal the jobs it paused, chunk errors by SQLSTATE
// equal the failures it logged, and the duration histogram counts each of
// them. The names follow Prometheus' rules (promlint), no label holds a job,
// tenant or worker, and the Go and process collectors are there.
func TestWorkerMetrics(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	good, bad := l.conflictScene(t, 17, "a", "b", "c", "locked")
	// An order of locked is held in another transaction: its chunks wait
	// 500 ms for the lock and fail with 55P03 until it is let go.
	holder := pgtest.Connect(t, l.DSN)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "select 1 from orders where id = $1 for update", good[3].Targets[0].ID); err != nil {
		t.Fatal(err)
	}

	w := l.worker(t, "w1", "--http", "127.0.0.1:0", "--concurrency", "2", "--poll", "50ms", "--retry-delay", "100ms",
		"--max-replica-lag", "1h")
	base := servedURL(t, w)
	first := w.WaitLine(t, 0, 20*time.Second, "chunk failed", "job=locked", "sqlstate=55P03")
	w.WaitLine(t, first+1, 20*time.Second, "chunk failed", "job=locked", "sqlstate=55P03") // at least two
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitFor(t, 30*time.Second, "the good jobs done and the bad one paused", func() bool {
		st := l.status(t)
		return st["a"].State == "done" && st["b"].State == "done" && st["c"].State == "done" &&
			st["locked"].State == "done" && st["changed"].State == "paused"
	})

	fams := metrics(t, base+"metrics")
	audit := pgtest.MustInt(t, l.Conn, "select count(*) from job_audit")
	chunks := pgtest.MustInt(t, l.Conn, `select sum(ceil(a.n::numeric / j.chunk_size))::int
		from jobs as j join (select job_id, count(*) as n from job_audit group by job_id) as a using (job_id)`)
	paused := pgtest.MustInt(t, l.Conn, "select count(*) from job_queue where paused and paused_by = 'w1'")
	failures := 0
	for _, line := range w.Lines() {
		if strings.Contains(line, "chunk failed") && strings.Contains(line, "sqlstate=55P03") {
			failures++
		}
	}
	if chunks != 4*4+1 || audit != 4*7+2 || paused != 1 || failures < 2 {
		t.Fatalf("the database says %d chunks, %d audit rows, %d paused; the log %d failures", chunks, audit, paused, failures)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   int
	}{
		{"chunks_chunks_committed_total", nil, chunks},
		{"chunks_orders_changed_total", nil, audit},
		{"chunks_conflicts_total", nil, paused},
		{"chunks_chunk_errors_total", []string{"sqlstate", "55P03"}, failures},
		{"chunks_chunk_duration_seconds", []string{"outcome", "committed"}, chunks},
		{"chunks_chunk_duration_seconds", []string{"outcome", "conflict"}, paused},
		{"chunks_chunk_duration_seconds", []string{"outcome", "error"}, failures},
		{"chunks_pass_errors_total", nil, 0},
		{"chunks_throttled", []string{"reason", "replica_lag"}, 0},
		{"chunks_throttled", []string{"reason", "throttle_query"}, 0},
		{"chunks_throttled", []string{"reason", "check_failed"}, 0},
		{"chunks_replica_lag_seconds", nil, 0}, // no standby
		{"chunks_chunk_rows_max", nil, 0},      // orders jobs only: no cap
	} {
		if got := sample(t, fams, c.name, c.labels...); got != float64(c.want) {
			t.Errorf("%s%v = %v, want %d", c.name, c.labels, got, c.want)
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
		if fams[name] == nil {
			t.Errorf("no %s: the Go and process collectors are missing", name)
		}
	}
	allowed := []string{"sqlstate", "outcome", "reason", "state", "le"}
	for name, f := range fams {
		if !strings.HasPrefix(name, "chunks_") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, label := range m.GetLabel() {
				if !slices.Contains(allowed, label.GetName()) {
					t.Errorf("%s has the label %s=%q: labels must stay bounded", name, label.GetName(), label.GetValue())
				}
			}
		}
	}
	raw := fetch(t, "GET", base+"metrics").body
	problems, err := promlint.New(bytes.NewBufferString(raw)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "chunks_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
	// The worker serves the page and the health checks too.
	for path, code := range map[string]int{"": 200, "healthz": 200, "readyz": 200, "jobs/a": 200, "api/status": 200} {
		if r := fetch(t, "GET", base+path); r.code != code {
			t.Errorf("worker: GET /%s: %d, want %d", path, r.code, code)
		}
	}
	stopWorkers(t, w)
	l.wantFinishedBut(t, good, bad)
}

// chunks_throttled says 1 for the cause while the worker holds new chunks,
// and 0 again when it runs.
func TestWorkerMetricsThrottled(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.Exec(t, "create table hold (x int)")
	l.Exec(t, "insert into hold values (1)")
	l.Exec(t, "grant select on hold to "+pgx.Identifier{l.operator.Name}.Sanitize()) // the query runs as the worker's role
	w := l.worker(t, "w1", "--http", "127.0.0.1:0", "--throttle-query", "select exists (select from hold)", "--check-interval", "20ms")
	base := servedURL(t, w)
	throttled := func() float64 {
		return sample(t, metrics(t, base+"metrics"), "chunks_throttled", "reason", "throttle_query")
	}
	pgtest.WaitFor(t, 10*time.Second, "chunks_throttled{reason=throttle_query} 1", func() bool { return throttled() == 1 })
	fams := metrics(t, base+"metrics")
	if got := sample(t, fams, "chunks_throttled", "reason", "replica_lag"); got != 0 {
		t.Errorf("chunks_throttled{reason=replica_lag} %v while the query holds", got)
	}
	if fams["chunks_replica_lag_seconds"] != nil {
		t.Errorf("chunks_replica_lag_seconds without --max-replica-lag")
	}
	j := newSeeder(l, 5).job(t, "j", 4, 2)
	l.register(t, j)
	l.Exec(t, "delete from hold")
	pgtest.WaitFor(t, 10*time.Second, "the job done once the query lets go", func() bool { return l.allDone(t) })
	if got := throttled(); got != 0 {
		t.Errorf("chunks_throttled{reason=throttle_query} %v after the query let go", got)
	}
	stopWorkers(t, w)
	l.wantFinished(t, []job{j})
}
