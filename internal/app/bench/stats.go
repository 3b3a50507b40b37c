package bench

import (
	"slices"
	"time"
)

// Result is one measured scenario.
type Result struct {
	Scenario   string  `json:"scenario"`
	Variant    string  `json:"variant"`
	Chunks     int     `json:"chunks"` // transactions, for the ceiling
	Orders     int     `json:"orders"`
	Seconds    float64 `json:"seconds"`
	ChunksPerS float64 `json:"chunks_per_s"`
	OrdersPerS float64 `json:"orders_per_s"`
	MeanMs     float64 `json:"mean_ms"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	RoundTrips float64 `json:"round_trips_per_chunk,omitempty"`
	// The server's commits and WAL fsyncs per chunk (pg_stat_database,
	// pg_stat_wal), for the scenarios that count them.
	CommitsPerChunk  float64 `json:"commits_per_chunk,omitempty"`
	WALSyncsPerChunk float64 `json:"wal_syncs_per_chunk,omitempty"`
	// WAL bytes written per chunk (pg_current_wal_lsn before and after).
	WALBytesPerChunk float64 `json:"wal_bytes_per_chunk,omitempty"`

	ownTxs int // transactions of the benchmark's own (polling), left out of CommitsPerChunk
}

// sample is what a timed loop gathered. latencies has one entry per chunk
// when they were timed one by one.
type sample struct {
	chunks    int
	latencies []time.Duration
	orders    int
	elapsed   time.Duration
	trips     int
	ownTxs    int
}

func (s *sample) add(o sample) {
	s.chunks += o.chunks
	s.latencies = append(s.latencies, o.latencies...)
	s.orders += o.orders
	s.trips += o.trips
	s.elapsed = max(s.elapsed, o.elapsed)
}

func (s sample) result(scenario, variant string, countTrips bool) Result {
	r := Result{Scenario: scenario, Variant: variant, Chunks: s.chunks, Orders: s.orders, Seconds: s.elapsed.Seconds(), ownTxs: s.ownTxs}
	if s.chunks == 0 || s.elapsed <= 0 {
		return r
	}
	r.ChunksPerS = float64(r.Chunks) / r.Seconds
	r.OrdersPerS = float64(r.Orders) / r.Seconds
	if countTrips {
		r.RoundTrips = float64(s.trips) / float64(r.Chunks)
	}
	if len(s.latencies) == 0 {
		return r
	}
	sorted := slices.Clone(s.latencies)
	slices.Sort(sorted)
	var sum time.Duration
	for _, l := range sorted {
		sum += l
	}
	r.MeanMs = ms(sum / time.Duration(len(sorted)))
	r.P50Ms = ms(sorted[len(sorted)/2])
	r.P99Ms = ms(sorted[min(len(sorted)-1, len(sorted)*99/100)])
	return r
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
