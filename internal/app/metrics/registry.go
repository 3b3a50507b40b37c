// Package metrics holds the Prometheus metrics of chunks worker --http and
// chunks serve --http, each on a registry of its own (never the global
// one), with the Go and process collectors. No label ever holds a job id,
// a tenant or a worker id: their values are bounded (a state, an SQLSTATE,
// a throttle cause, an outcome), so the number of series stays small
// however many jobs run. Per-job figures are on the status page.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// namespace starts every chunks metric's name.
const namespace = "chunks"

// NewRegistry is a registry with the Go and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
