package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/chunks-dev/chunks/driver"
)

func drainCommand() *cli.Command {
	return &cli.Command{
		Name:      "drain",
		Usage:     "run the job's chunks until it is done (at most --max-chunks calls per worker)",
		UsageText: "chunks drain [--max-chunks N] [--workers N] [--dsn DSN] [--schema S] [--json] JOB",
		Description: "Each chunk is one call on a connection of its own; the first error stops the drain, with no\n" +
			"retry. With --workers N, N drainers run at once on their own connections (the job row lock\n" +
			"serializes them) and their results are combined: calls summed, ids merged in id order. A\n" +
			"progress bar is drawn on stderr when it is a terminal.\n\n" +
			"Example:\n  chunks --schema lab drain --max-chunks 64 --workers 2 festival-2026",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "max-chunks", Value: driver.MaxMaxChunks, Usage: "at most `N` calls per worker, 1 to 64"},
			&cli.IntFlag{Name: "workers", Value: 1, Usage: "run `N` drainers at once, 1 to 64"},
		},
		Action: func(c *cli.Context) error {
			jobID, err := jobArg(c) // a valid id, before any connection
			if err != nil {
				return err
			}
			workers := c.Int("workers")
			if workers < 1 || workers > 64 {
				return &driver.Error{Kind: driver.ErrInvalid, Msg: fmt.Sprintf("workers: must be between 1 and 64, got %d", workers)}
			}
			// Checked here too (driver.Drain checks it per worker): before the
			// progress bar's connection, and said once, not once per worker.
			if n := c.Int("max-chunks"); n < 1 || n > driver.MaxMaxChunks {
				return &driver.Error{Kind: driver.ErrInvalid, Msg: fmt.Sprintf("max_chunks: must be between 1 and %d, got %d", driver.MaxMaxChunks, n)}
			}
			cfg, err := connConfig(c)
			if err != nil {
				return err
			}
			stopProgress := func() error { return nil }
			if !jsonOut(c) && term.IsTerminal(int(os.Stderr.Fd())) {
				stopProgress = showProgress(c, jobID)
			}
			res, err := drainWorkers(c.Context, cfg, jobID, c.Int("max-chunks"), workers)
			err = errors.Join(connectHint(c, err), stopProgress())
			if res.Calls == 0 && err != nil {
				return err // nothing was done: stdout stays empty
			}
			if jsonOut(c) {
				if perr := printJSON(res); perr != nil {
					return errors.Join(err, perr)
				}
			} else {
				say("job %s: %d calls cancelled %s; next_index %d%s", jobID, res.Calls, ids(res.Processed), res.NextIndex, doneSuffix(res.Done))
			}
			return err
		},
	}
}

// drainWorkers runs n drains of one job at once and combines their results.
func drainWorkers(ctx context.Context, cfg *pgx.ConnConfig, jobID string, maxChunks, n int) (driver.DrainResult, error) {
	results := make([]driver.DrainResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = driver.DrainConfig(ctx, cfg, jobID, maxChunks)
		}()
	}
	wg.Wait()
	out := driver.DrainResult{Processed: []int64{}}
	for _, r := range results {
		out.Calls += r.Calls
		out.Processed = append(out.Processed, r.Processed...)
		out.NextIndex = max(out.NextIndex, r.NextIndex)
		out.Done = out.Done || r.Done
	}
	slices.Sort(out.Processed)
	// Workers that fail the same way (an unknown job, a refused connection)
	// say it once.
	var distinct []error
	for _, err := range errs {
		if err != nil && !slices.ContainsFunc(distinct, func(d error) bool { return d.Error() == err.Error() }) {
			distinct = append(distinct, err)
		}
	}
	return out, errors.Join(distinct...)
}

// showProgress draws the job's chunks done / total and ids/s on stderr, reading
// the job's progress from the database, until the returned stop is called.
func showProgress(c *cli.Context, jobID string) (stop func() error) {
	conn, err := connect(c)
	if err != nil {
		return func() error { return err }
	}
	job, err := driver.InspectJob(c.Context, conn, jobID)
	if err != nil || job == nil {
		return func() error { return errors.Join(err, conn.Close(context.WithoutCancel(c.Context))) }
	}
	n, size := len(job.Targets), job.ChunkSize
	chunksOf := func(ids int) int { return (ids + size - 1) / size } // the last chunk may be short
	bar := progressbar.NewOptions(chunksOf(n),
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription("job "+jobID),
		progressbar.OptionShowCount(), // chunks done / total
		progressbar.OptionThrottle(50*time.Millisecond),
		progressbar.OptionClearOnFinish())
	done := make(chan struct{})
	finished := make(chan error, 1)
	go func() {
		var perr error
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		start, first := time.Now(), job.NextIndex
		for {
			var next int
			if perr = conn.QueryRow(c.Context, "select next_index from jobs where job_id = $1", jobID).Scan(&next); perr != nil {
				break
			}
			rate := float64(next-first) / time.Since(start).Seconds()
			bar.Describe(fmt.Sprintf("job %s: %d/%d ids, %.0f ids/s, chunks", jobID, next, n, rate))
			if perr = bar.Set(chunksOf(next)); perr != nil {
				break
			}
			select {
			case <-done:
				finished <- errors.Join(bar.Finish(), conn.Close(context.WithoutCancel(c.Context)))
				return
			case <-tick.C:
			}
		}
		<-done
		finished <- errors.Join(perr, conn.Close(context.WithoutCancel(c.Context)))
	}()
	return func() error {
		close(done)
		return <-finished
	}
}
