package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
)

// scrapeTimeout bounds the one query of a database scrape.
const scrapeTimeout = 5 * time.Second

// Database collects the gauges that come from the database (chunks serve):
// jobs by state, the orders left, the live workers by state, how long
// the most neglected queued job has gone without progress and the jobs of
// each declared change by state. Each scrape is
// one query ([fleet.Totals]); when it fails, chunks_database_up is 0 and
// the other gauges are left out (and the error is logged).
type Database struct {
	DB  driver.DB
	Log *slog.Logger
}

var (
	upDesc = prometheus.NewDesc(namespace+"_database_up",
		"1 when the last scrape read the fleet from the database, 0 when that failed.", nil, nil)
	jobsDesc = prometheus.NewDesc(namespace+"_jobs",
		"Jobs by state: queued, running, paused, done, idle, abandoned, proposed (two people: waiting for approval).", []string{"state"}, nil)
	unfinishedDesc = prometheus.NewDesc(namespace+"_unfinished_orders",
		"Approved targets (rows) of unfinished jobs that are not committed yet (the name keeps its first word, orders, so that dashboards and alerts keep working).", nil, nil)
	workersDesc = prometheus.NewDesc(namespace+"_live_workers",
		"Workers with a heartbeat in the last 10 s, by state: running, idle, throttled.", []string{"state"}, nil)
	changeJobsDesc = prometheus.NewDesc(namespace+"_change_jobs",
		"Jobs of each declared change (chunks change define) by state: queued, running, paused, done, idle. The change label is bounded by the changes the schema's owner declared.",
		[]string{"change", "state"}, nil)
	quietDesc = prometheus.NewDesc(namespace+"_longest_no_progress_seconds",
		"Of the queued and running jobs, the longest time one has gone without progress (since a worker last saw it move forward, else since it was queued); 0 when there are none.",
		nil, nil)
)

// Describe sends the descriptions of the database gauges.
func (d *Database) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range []*prometheus.Desc{upDesc, jobsDesc, unfinishedDesc, workersDesc, quietDesc, changeJobsDesc} {
		ch <- desc
	}
}

// Collect reads the fleet once and sends the gauges.
func (d *Database) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	ov, err := fleet.Totals(ctx, d.DB)
	if err != nil {
		if d.Log != nil {
			d.Log.Error("metrics: could not read the fleet from the database", "error", err)
		}
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	for _, state := range fleet.States {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(ov.Counts[state]), state)
	}
	ch <- prometheus.MustNewConstMetric(unfinishedDesc, prometheus.GaugeValue, float64(ov.UnfinishedOrders))
	workers := map[string]int{}
	for _, w := range ov.Workers {
		workers[w.State]++
	}
	for _, state := range []string{"running", "idle", "throttled"} {
		ch <- prometheus.MustNewConstMetric(workersDesc, prometheus.GaugeValue, float64(workers[state]), state)
	}
	quiet := 0.0
	if ov.OldestProgressAt != nil {
		quiet = max(ov.Now.Sub(*ov.OldestProgressAt).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(quietDesc, prometheus.GaugeValue, quiet)
	for change, counts := range ov.Changes {
		for _, state := range fleet.States {
			ch <- prometheus.MustNewConstMetric(changeJobsDesc, prometheus.GaugeValue, float64(counts[state]), change, state)
		}
	}
}
