package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/wire"
)

// chunkFunc runs one chunk of a job on a connection.
type chunkFunc func(ctx context.Context, conn *pgx.Conn, jobID string) (driver.ChunkResult, error)

func runChunk(ctx context.Context, conn *pgx.Conn, jobID string) (driver.ChunkResult, error) {
	return driver.RunChunk(ctx, conn, jobID, nil)
}

// runChunkWithHooks is RunChunk with a fault hook that does nothing: the
// two-round-trip path.
func runChunkWithHooks(ctx context.Context, conn *pgx.Conn, jobID string) (driver.ChunkResult, error) {
	return driver.RunChunk(ctx, conn, jobID, func(string) error { return nil })
}

// connect opens a connection on cfg, counting its round trips.
func connect(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, *wire.Counter, error) {
	cfg = cfg.Copy()
	counter := wire.Count(cfg)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return conn, counter(), nil
}

// closeConn closes conn and keeps the first error.
func closeConn(ctx context.Context, conn *pgx.Conn, err *error) {
	*err = errors.Join(*err, conn.Close(context.WithoutCancel(ctx)))
}

// drainFor runs chunks of jobs, in order and each to the end, on one
// connection until d has passed or the jobs run out.
func drainFor(ctx context.Context, cfg *pgx.ConnConfig, d time.Duration, jobs <-chan string, chunk chunkFunc) (s sample, err error) {
	conn, counter, err := connect(ctx, cfg)
	if err != nil {
		return s, err
	}
	defer closeConn(ctx, conn, &err)
	return drainOn(ctx, conn, counter, d, jobs, chunk)
}

// drainOn is drainFor on an open connection, whose round trips counter
// counts (nil: not counted).
func drainOn(ctx context.Context, conn *pgx.Conn, counter *wire.Counter, d time.Duration, jobs <-chan string, chunk chunkFunc) (s sample, err error) {
	if counter != nil {
		counter.Take() // the connection's start-up or earlier work is not a chunk's
	}
	start := time.Now()
	deadline := start.Add(d)
	for job := range jobs {
		for done := false; !done && time.Now().Before(deadline); {
			t0 := time.Now()
			res, err := chunk(ctx, conn, job)
			if err != nil {
				return s, fmt.Errorf("job %s: %w", job, err)
			}
			s.latencies = append(s.latencies, time.Since(t0))
			s.chunks++
			s.orders += len(res.Processed)
			done = res.Done
		}
		if !time.Now().Before(deadline) {
			break
		}
	}
	s.elapsed = time.Since(start)
	if counter != nil {
		s.trips = counter.Take()
	}
	return s, nil
}

// queue hands out jobs to workers.
func queue(jobs []string) <-chan string {
	ch := make(chan string, len(jobs))
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	return ch
}

// parallel runs n drainFor workers on distinct jobs at once.
func parallel(ctx context.Context, cfg *pgx.ConnConfig, d time.Duration, n int, jobs []string, chunk chunkFunc) (sample, error) {
	ch := queue(jobs)
	samples := make([]sample, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			samples[i], errs[i] = drainFor(ctx, cfg, d, ch, chunk)
		}()
	}
	wg.Wait()
	var total sample
	for _, s := range samples {
		total.add(s)
	}
	return total, errors.Join(errs...)
}

// sameJob runs n workers that all drain the same job until it is done, then
// all move to the next: the job row lock serializes them.
func sameJob(ctx context.Context, cfg *pgx.ConnConfig, d time.Duration, n int, jobs []string) (sample, error) {
	var current atomic.Int64
	samples := make([]sample, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, _, err := connect(ctx, cfg)
			if err != nil {
				errs[i] = err
				return
			}
			defer closeConn(ctx, conn, &errs[i])
			start := time.Now() // after connecting, as drainFor does
			for time.Since(start) < d {
				k := current.Load()
				if int(k) >= len(jobs) {
					break
				}
				t0 := time.Now()
				res, err := driver.RunChunk(ctx, conn, jobs[k], nil)
				if err != nil {
					errs[i] = fmt.Errorf("job %s: %w", jobs[k], err)
					return
				}
				if len(res.Processed) > 0 {
					samples[i].latencies = append(samples[i].latencies, time.Since(t0))
					samples[i].chunks++
					samples[i].orders += len(res.Processed)
				}
				if res.Done {
					current.CompareAndSwap(k, k+1)
				}
			}
			samples[i].elapsed = time.Since(start)
		}()
	}
	wg.Wait()
	var total sample
	for _, s := range samples {
		total.add(s)
	}
	return total, errors.Join(errs...)
}

// ceiling is the commit-rate ceiling of one connection: back-to-back
// single-statement transactions, as pgbench's simple-update does them.
func ceiling(ctx context.Context, cfg *pgx.ConnConfig, d time.Duration, firstID int64, n int) (s sample, err error) {
	conn, counter, err := connect(ctx, cfg)
	if err != nil {
		return s, err
	}
	defer closeConn(ctx, conn, &err)
	counter.Take()
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		t0 := time.Now()
		if _, err := conn.Exec(ctx, "update orders set revision = revision + 1 where id = $1", firstID+int64(i%n)); err != nil {
			return s, err
		}
		s.latencies = append(s.latencies, time.Since(t0))
		s.chunks++
		s.orders++
	}
	s.elapsed = time.Since(start)
	if counter != nil {
		s.trips = counter.Take()
	}
	return s, nil
}
