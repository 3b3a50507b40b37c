package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/pace"
)

// The outcomes of a chunk, the label of chunks_chunk_duration_seconds.
const (
	OutcomeCommitted  = "committed"   // the chunk committed
	OutcomeConflict   = "conflict"    // it rolled back with a conflict and its job was paused
	OutcomeErrorPause = "error_pause" // it rolled back with an error that is not transient, and its job was paused
	OutcomeError      = "error"       // it rolled back with a transient error; its job rests
)

// Worker is a worker's metrics: a [fleet.Observer] that counts every pass,
// and a collector of the worker's pacing, read at each scrape.
type Worker struct {
	committed   prometheus.Counter
	changed     prometheus.Counter
	conflicts   prometheus.Counter
	errorPauses prometheus.Counter
	errors      *prometheus.CounterVec
	passErrors  prometheus.Counter
	duration    *prometheus.HistogramVec
}

// NewWorker registers a worker's metrics on reg and returns the observer
// to set as the worker's [fleet.Worker.Observer]. pacing is read at each
// scrape for chunks_throttled; chunks_replica_lag_seconds is there only
// when lagMeasured (--max-replica-lag is set). chunkRows, read at each
// scrape, is the worker's adaptive cap on a declared change's chunk
// ([fleet.Worker.ChunkRows]).
func NewWorker(reg prometheus.Registerer, pacing func() pace.State, lagMeasured bool, chunkRows func() int) (*Worker, error) {
	m := &Worker{
		committed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "chunks_committed_total",
			Help: "Chunks this worker committed that changed rows (orders, or a declared change's table)."}),
		changed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "orders_changed_total",
			Help: "Rows changed by the chunks this worker committed (the name keeps its first word, orders, so that dashboards and alerts keep working)."}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "conflicts_total",
			Help: "Chunks that met a conflict and rolled back: each paused its job until a person resumes it."}),
		errorPauses: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "error_pauses_total",
			Help: "Chunks that rolled back with an error that is neither a conflict nor transient (a trigger's exception, a constraint, a privilege...): each paused its job until a person resumes it."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "chunk_errors_total",
			Help: "Chunks that rolled back with a transient error (a lock or statement timeout, a serialization failure, a deadlock, a lost connection): their job rests, then any worker retries it, by SQLSTATE."},
			[]string{"sqlstate"}),
		passErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "pass_errors_total",
			Help: "Passes that failed as a whole, committing nothing (the connection was lost, the server restarts...)."}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "chunk_duration_seconds",
			Help:    "How long each chunk's pass took, its round trip included, by outcome (committed, conflict, error_pause, error).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}},
			[]string{"outcome"}),
	}
	rows := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "chunk_rows_max",
		Help: "The worker's adaptive cap on a declared change's chunk, in rows (--chunk-time, and the pacer's holds); 0 while there is none: each job's approved chunk size."},
		func() float64 { return float64(chunkRows()) })
	cs := []prometheus.Collector{m.committed, m.changed, m.conflicts, m.errorPauses, m.errors, m.passErrors, m.duration,
		&pacingCollector{pacing: pacing, lag: lagMeasured}, rows}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, o := range []string{OutcomeCommitted, OutcomeConflict, OutcomeErrorPause, OutcomeError} {
		m.duration.WithLabelValues(o) // every outcome shows, at 0, from the start
	}
	return m, nil
}

// Ran counts a pass that took a job ([fleet.Observer]). A canary's last
// chunk (paused, with no error) counts as committed.
func (m *Worker) Ran(p *fleet.Pass, took time.Duration) {
	switch {
	case p.Conflict():
		m.conflicts.Inc()
		m.duration.WithLabelValues(OutcomeConflict).Observe(took.Seconds())
	case p.PausedByError():
		m.errorPauses.Inc()
		m.duration.WithLabelValues(OutcomeErrorPause).Observe(took.Seconds())
	case p.Err != "":
		m.errors.WithLabelValues(p.SQLState).Inc()
		m.duration.WithLabelValues(OutcomeError).Observe(took.Seconds())
	case len(p.Processed) > 0:
		m.committed.Inc()
		m.changed.Add(float64(len(p.Processed)))
		m.duration.WithLabelValues(OutcomeCommitted).Observe(took.Seconds())
	}
}

// Failed counts a pass that failed as a whole ([fleet.Observer]).
func (m *Worker) Failed(error) { m.passErrors.Inc() }

// pacingCollector reads the worker's pacing at each scrape.
type pacingCollector struct {
	pacing func() pace.State
	lag    bool
}

var (
	throttledDesc = prometheus.NewDesc(namespace+"_throttled",
		"1 while the worker holds new chunks, for this cause (replica_lag, throttle_query, check_failed); 0 otherwise.",
		[]string{"reason"}, nil)
	replicaLagDesc = prometheus.NewDesc(namespace+"_replica_lag_seconds",
		"The largest replay lag of the standbys streaming from the server, as last measured (with --max-replica-lag).",
		nil, nil)
)

// Describe sends the descriptions of the pacing metrics.
func (c *pacingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- throttledDesc
	if c.lag {
		ch <- replicaLagDesc
	}
}

// Collect sends the pacing metrics as they are now.
func (c *pacingCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.pacing()
	for _, cause := range pace.Causes {
		v := 0.0
		if st.Throttled && st.Cause == cause {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(throttledDesc, prometheus.GaugeValue, v, cause)
	}
	if c.lag {
		ch <- prometheus.MustNewConstMetric(replicaLagDesc, prometheus.GaugeValue, st.Lag.Seconds())
	}
}
