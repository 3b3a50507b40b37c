package fleet

import (
	"cmp"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/pace"
)

// Validate checks every field of w, as [Worker.Start] does before it
// connects: a Pool, an ID that application_name keeps ([CheckID]; empty is
// [DefaultID]), Concurrency from 1 to [MaxConcurrency], Poll from [MinPoll]
// and RetryDelay, ChunkTime and Slice from 1 ms, all up to [MaxDuration],
// SliceChunks from 1 to [MaxSliceChunks], Rate 0 or from
// [MinRate] to [MaxRate], and Pace ([pace.Config.Validate]); a zero field
// stands for its default. The error is an [driver.ErrInvalid] naming the
// field. Validate connects to nothing.
func (w *Worker) Validate() error {
	if w.Pool == nil {
		return driver.Invalidf("pool: is nil")
	}
	if w.ID != "" {
		if err := CheckID("id", w.ID); err != nil {
			return err
		}
	}
	if err := CheckConcurrency(cmp.Or(w.Concurrency, 1)); err != nil {
		return err
	}
	for _, d := range []struct {
		name     string
		v        time.Duration
		min      time.Duration
		fallback time.Duration
	}{{"poll", w.Poll, MinPoll, DefaultPoll}, {"retry_delay", w.RetryDelay, time.Millisecond, DefaultRetryDelay},
		{"chunk_time", w.ChunkTime, time.Millisecond, DefaultChunkTime}, {"slice", w.Slice, time.Millisecond, DefaultSlice}} {
		if v := cmp.Or(d.v, d.fallback); v < d.min || v > MaxDuration {
			return driver.Invalidf("%s: must be between %s and %s, got %s", d.name, d.min, MaxDuration, v)
		}
	}
	if math.IsNaN(w.Rate) || w.Rate != 0 && (w.Rate < MinRate || w.Rate > MaxRate) {
		return driver.Invalidf("rate: must be 0 (no limit) or between 1/86400 (one chunk a day) and %d chunks per second per job, got %v",
			MaxRate, w.Rate)
	}
	if n := cmp.Or(w.SliceChunks, DefaultSliceChunks); n < 1 || n > MaxSliceChunks {
		return driver.Invalidf("slice_chunks: must be between 1 (no slices) and %d, got %d", MaxSliceChunks, n)
	}
	if err := w.Pace.Validate(); err != nil {
		return driver.Invalidf("%v", err)
	}
	return nil
}

// CheckConcurrency refuses a number of passes that is not 1 to
// [MaxConcurrency] (the field [Worker.Concurrency] takes 0 for 1, chunks
// worker --concurrency does not). The error is an [driver.ErrInvalid]
// naming concurrency.
func CheckConcurrency(n int) error {
	if n < 1 || n > MaxConcurrency {
		return driver.Invalidf("concurrency: must be between 1 and %d, got %d", MaxConcurrency, n)
	}
	return nil
}

// runner is one start of a [Worker]: its settings with the defaults
// applied.
type runner struct {
	w           *Worker
	pool        *pgxpool.Pool
	id          string
	passes      int
	poll        time.Duration
	rateDelay   time.Duration
	retryDelay  time.Duration
	log         *slog.Logger
	pacer       *pace.Pacer
	sizer       *Sizer
	slice       time.Duration // how long a slice may run its job's chunks back to back
	sliceChunks int           // how many chunks a slice runs at most (1: no slices)
	wake        chan struct{} // one token: "look at the queue"
	passLog     quiet
	listenLog   quiet
}

// runner validates w and applies the defaults.
func (w *Worker) runner() (*runner, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	r := &runner{w: w, pool: w.Pool, id: w.ID, passes: cmp.Or(w.Concurrency, 1), poll: cmp.Or(w.Poll, DefaultPoll),
		retryDelay: cmp.Or(w.RetryDelay, DefaultRetryDelay), log: w.Logger, wake: make(chan struct{}, 1),
		sizer: NewSizer(cmp.Or(w.ChunkTime, DefaultChunkTime)), slice: cmp.Or(w.Slice, DefaultSlice),
		sliceChunks: cmp.Or(w.SliceChunks, DefaultSliceChunks)}
	w.sizer.Store(r.sizer)
	if r.id == "" {
		r.id = DefaultID()
	}
	if w.Rate > 0 {
		r.rateDelay = time.Duration(math.Ceil(float64(time.Second) / w.Rate))
	}
	if r.log == nil {
		r.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	r.log = r.log.With("worker", r.id)
	var err error
	if r.pacer, err = pace.New(w.Pace, r.pool, r.log); err != nil {
		return nil, driver.Invalidf("%v", err)
	}
	w.pacer.Store(r.pacer)
	return r, nil
}
