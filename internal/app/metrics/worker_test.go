package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/pace"
)

// Each kind of pass lands in its own counter and outcome, with exact values.
func TestWorkerCountsEachPass(t *testing.T) {
	reg := prometheus.NewRegistry()
	rows := 0
	m, err := NewWorker(reg, func() pace.State { return pace.State{} }, false, func() int { return rows })
	if err != nil {
		t.Fatal(err)
	}
	m.Ran(&fleet.Pass{JobID: "a", Processed: []driver.Key{driver.IntKey(1), driver.IntKey(2), driver.IntKey(3)}}, 10*time.Millisecond)
	m.Ran(&fleet.Pass{JobID: "a", Processed: []driver.Key{driver.IntKey(4)}, Done: true}, 20*time.Millisecond)
	m.Ran(&fleet.Pass{JobID: "b", Paused: true, SQLState: "CH409", Err: "conflict"}, 30*time.Millisecond)
	m.Ran(&fleet.Pass{JobID: "c", SQLState: "40P01", Err: "deadlock"}, 40*time.Millisecond)
	m.Ran(&fleet.Pass{JobID: "c", SQLState: "40P01", Err: "deadlock"}, 40*time.Millisecond)
	m.Ran(&fleet.Pass{JobID: "d"}, time.Millisecond) // a finished job's pass: nothing changed, nothing counted
	m.Ran(&fleet.Pass{JobID: "e", Paused: true, SQLState: "P0001", Err: "payment 1 is frozen"}, 50*time.Millisecond)
	m.Ran(&fleet.Pass{JobID: "e", Paused: true, SQLState: "22023", Err: "job_id: must be ..."}, 60*time.Millisecond)
	// A canary's last chunk: it committed, and the job paused with no error.
	m.Ran(&fleet.Pass{JobID: "f", Processed: []driver.Key{driver.IntKey(5)}, Paused: true}, 10*time.Millisecond)
	m.Failed(nil)

	checks := []struct {
		name      string
		got, want float64
	}{
		{"chunks_committed_total", testutil.ToFloat64(m.committed), 3},
		{"orders_changed_total", testutil.ToFloat64(m.changed), 5},
		{"conflicts_total", testutil.ToFloat64(m.conflicts), 2},
		{"error_pauses_total", testutil.ToFloat64(m.errorPauses), 1},
		{"chunk_errors_total (series)", float64(testutil.CollectAndCount(m.errors)), 1},
		{"pass_errors_total", testutil.ToFloat64(m.passErrors), 1},
		{`chunk_errors_total{sqlstate="40P01"}`, testutil.ToFloat64(m.errors.WithLabelValues("40P01")), 2},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// The adaptive cap is read at each scrape.
	rows = 250
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP chunks_chunk_rows_max The worker's adaptive cap on a declared change's chunk, in rows (--chunk-time, and the pacer's holds); 0 while there is none: each job's approved chunk size.
# TYPE chunks_chunk_rows_max gauge
chunks_chunk_rows_max 250
`), "chunks_chunk_rows_max"); err != nil {
		t.Error(err)
	}
	want := `
# HELP chunks_chunk_duration_seconds How long each chunk's pass took, its round trip included, by outcome (committed, conflict, error_pause, error).
# TYPE chunks_chunk_duration_seconds histogram
chunks_chunk_duration_seconds_bucket{outcome="committed",le="0.001"} 0
chunks_chunk_duration_seconds_bucket{outcome="committed",le="0.0025"} 0
chunks_chunk_duration_seconds_bucket{outcome="committed",le="0.005"} 0
chunks_chunk_duration_seconds_bucket{outcome="committed",le="0.01"} 2
chunks_chunk_duration_seconds_bucket{outcome="committed",le="0.025"} 3
chunks_chunk_duration_seconds_bucket{outcome="committed",le="0.05"} 3
chunks_chunk_duration_seconds_bucket{outcome="committed",le="0.1"} 3
chunks_chunk_duration_seconds_bucket{outcome="committed",le="0.25"} 3
chunks_chunk_duration_seconds_bucket{outcome="committed",le="0.5"} 3
chunks_chunk_duration_seconds_bucket{outcome="committed",le="1"} 3
chunks_chunk_duration_seconds_bucket{outcome="committed",le="2.5"} 3
chunks_chunk_duration_seconds_bucket{outcome="committed",le="5"} 3
chunks_chunk_duration_seconds_bucket{outcome="committed",le="+Inf"} 3
chunks_chunk_duration_seconds_sum{outcome="committed"} 0.04
chunks_chunk_duration_seconds_count{outcome="committed"} 3
`
	if err := testutil.CollectAndCompare(onlyOutcome{m.duration, "committed"}, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.duration); n != 4 {
		t.Errorf("chunk_duration_seconds has %d series, want one per outcome (4)", n)
	}
}

// onlyOutcome collects one outcome's series of a histogram vector.
type onlyOutcome struct {
	vec     *prometheus.HistogramVec
	outcome string
}

func (o onlyOutcome) Describe(ch chan<- *prometheus.Desc) { o.vec.Describe(ch) }
func (o onlyOutcome) Collect(ch chan<- prometheus.Metric) {
	o.vec.WithLabelValues(o.outcome).(prometheus.Histogram).Collect(ch)
}

// Every outcome shows from the start, at 0.
func TestWorkerOutcomesStartAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewWorker(reg, func() pace.State { return pace.State{} }, false, func() int { return 0 }); err != nil {
		t.Fatal(err)
	}
	got, err := testutil.GatherAndCount(reg, "chunks_chunk_duration_seconds")
	if err != nil || got != 4 {
		t.Fatalf("chunk_duration_seconds series at start: %d (%v), want 4", got, err)
	}
	// Registering a second worker's metrics on the same registry is refused.
	if _, err := NewWorker(reg, func() pace.State { return pace.State{} }, false, func() int { return 0 }); err == nil {
		t.Fatal("a second NewWorker on one registry was accepted")
	}
}

// chunks_throttled is 1 for the pacer's cause only, read at each scrape;
// chunks_replica_lag_seconds is there only when the lag is measured.
func TestPacingGauges(t *testing.T) {
	st := pace.State{}
	c := &pacingCollector{pacing: func() pace.State { return st }, lag: true}
	gauges := func() string {
		t.Helper()
		var b strings.Builder
		for _, cause := range pace.Causes {
			b.WriteString(cause)
			b.WriteString("=")
			if v := testutil.ToFloat64(causeGauge{c, cause}); v == 1 {
				b.WriteString("1 ")
			} else {
				b.WriteString("0 ")
			}
		}
		return b.String()
	}
	if got := gauges(); got != "replica_lag=0 throttle_query=0 check_failed=0 " {
		t.Fatalf("not throttled: %s", got)
	}
	st = pace.State{Throttled: true, Cause: pace.CauseThrottleQuery, Reason: "the throttle query returned true", Lag: 1500 * time.Millisecond}
	if got := gauges(); got != "replica_lag=0 throttle_query=1 check_failed=0 " {
		t.Fatalf("throttled by the query: %s", got)
	}
	if n := testutil.CollectAndCount(c, "chunks_replica_lag_seconds"); n != 1 {
		t.Fatalf("replica_lag_seconds series: %d, want 1", n)
	}
	want := "# HELP chunks_replica_lag_seconds " + "The largest replay lag of the standbys streaming from the server, as last measured (with --max-replica-lag).\n" +
		"# TYPE chunks_replica_lag_seconds gauge\nchunks_replica_lag_seconds 1.5\n"
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "chunks_replica_lag_seconds"); err != nil {
		t.Error(err)
	}
	off := &pacingCollector{pacing: c.pacing}
	if n := testutil.CollectAndCount(off, "chunks_replica_lag_seconds"); n != 0 {
		t.Fatalf("replica_lag_seconds without --max-replica-lag: %d series, want none", n)
	}
}

// causeGauge is the one chunks_throttled series of a cause.
type causeGauge struct {
	c     *pacingCollector
	cause string
}

func (g causeGauge) Describe(ch chan<- *prometheus.Desc) { g.c.Describe(ch) }
func (g causeGauge) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric, 8)
	g.c.Collect(all)
	close(all)
	for m := range all {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			panic(err) // a const metric always writes
		}
		if m.Desc() == throttledDesc && len(pb.GetLabel()) == 1 && pb.GetLabel()[0].GetValue() == g.cause {
			ch <- m
		}
	}
}
