package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/pace"
)

func drainCommand() *cli.Command {
	return &cli.Command{
		Name:      "drain",
		Usage:     "run the job's chunks until it is done (at most --max-chunks calls per worker)",
		UsageText: "chunks drain [--max-chunks N] [--workers N] [--tenant T] [--dsn DSN] [--schema S] [--json] JOB",
		Description: "Each chunk is one call on a connection of its own; the first error stops the drain, with no\n" +
			"retry. With --workers N, N drainers run at once on their own connections (the job row lock\n" +
			"serializes them) and their results are combined: calls summed, ids merged in id order; a\n" +
			"drainer that fails is named (\"drainer 2 of 3: ...\"). --workers only helps while a chunk takes\n" +
			"well under 500 ms: a drainer waits at most 500 ms for the job row, then fails with 55P03.\n" +
			"A progress bar (ids done / all) is drawn on stderr when it is a terminal. SIGINT or SIGTERM\n" +
			"cancels the chunk in flight (it rolls back), clears the bar, prints what this drain\n" +
			"committed, as on success, and exits 130 (SIGINT) or 143 (SIGTERM). With --max-replica-lag or\n" +
			"--throttle-query each call first waits while a standby is too far behind or the query says so\n" +
			"(waiting is not a call; the bar shows why). With --tenant, through a chunks router: each chunk\n" +
			"runs on the tenant's shard, as one transaction there, each drainer on one router connection.\n\n" +
			"Example:\n  chunks --schema lab drain --max-chunks 64 --workers 2 festival-2026",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "max-chunks", Value: driver.MaxMaxChunks, Usage: "at most `N` calls per worker, 1 to 64"},
			&cli.IntFlag{Name: "workers", Value: 1, Usage: "run `N` drainers at once, 1 to 64"},
			tenantFlag(),
		}, paceFlagDefs()...),
		Action: action(parseDrain, runDrain),
	}
}

// drainOptions is chunks drain [--max-chunks N] [--workers N] [pacing] JOB.
type drainOptions struct {
	Job       driver.JobRef
	MaxChunks int         // --max-chunks: at most this many calls per drainer
	Workers   int         // --workers: this many drainers at once
	Pace      pace.Config // --max-replica-lag, --throttle-query, --check-interval
}

// parseDrain fills drainOptions from the command line (paceFlags: the
// pacing flags, as the worker reads them).
func parseDrain(c *cli.Context) (*drainOptions, error) {
	job, err := parseJobRef(c)
	return &drainOptions{Job: job, MaxChunks: c.Int("max-chunks"), Workers: c.Int("workers"), Pace: paceFlags(c)}, err
}

// Validate checks the job, the counts and the pacing. max-chunks is checked
// here too (driver.Drain checks it per drainer): before the progress bar's
// connection, and said once, not once per drainer.
func (o *drainOptions) Validate() error {
	if err := o.Job.Validate(); err != nil {
		return err
	}
	if o.Workers < 1 || o.Workers > 64 {
		return driver.Invalidf("workers: must be between 1 and 64, got %d", o.Workers)
	}
	if o.MaxChunks < 1 || o.MaxChunks > driver.MaxMaxChunks {
		return driver.Invalidf("max_chunks: must be between 1 and %d, got %d", driver.MaxMaxChunks, o.MaxChunks)
	}
	if err := o.Pace.Validate(); err != nil {
		return driver.Invalidf("%v", err)
	}
	return nil
}

// runDrain runs the job's chunks with o.Workers drainers until it is done,
// each at most o.MaxChunks calls, drawing a bar on d.stderr when it is a
// terminal; SIGINT or SIGTERM stops it (interruptedError), after it says
// what it committed.
func runDrain(ctx context.Context, d deps, o *drainOptions, out io.Writer) error {
	job := o.Job
	cfg, err := d.connConfig()
	if err != nil {
		return err
	}
	if !o.Pace.Off() {
		if err := refuseRouter(ctx, d); err != nil {
			return err
		}
	}
	change := changed(nil)
	if !d.json {
		if change, err = jobChange(ctx, d, job); err != nil {
			return err
		}
	}
	// The drainers stop at a signal; the bar goes on reading on the
	// parent context until it is cleared.
	parent := ctx
	ctx, interrupted, release := cancelOnSignal(ctx)
	defer release()
	pacer, closePacer, err := newPacer(ctx, cfg, o.Pace, d.stderr)
	if err != nil {
		return err
	}
	defer closePacer()
	stopProgress := func() error { return nil }
	if !d.json && isTerminal(d.stderr) {
		stopProgress = showProgress(parent, d, job, pacer)
	}
	drainOne := func(ctx context.Context) (driver.DrainResult, error) {
		return driver.DrainConfig(ctx, cfg, job, o.MaxChunks, paced(pacer))
	}
	res, err := drainWorkers(ctx, o.Workers, drainOne)
	err = d.connectHint(err)
	if sig := interrupted(); sig != 0 {
		err = &interruptedError{signal: sig, err: err} // the drainers' cancellations are dropped; anything else is kept
	}
	err = errors.Join(err, stopProgress())
	var stopped *interruptedError
	if res.Calls == 0 && err != nil && !errors.As(err, &stopped) {
		return err // nothing was done: stdout stays empty
	}
	if d.json {
		if perr := printJSON(out, drainJSONOf(res)); perr != nil {
			return errors.Join(err, perr)
		}
	} else {
		done := ""
		if err == nil {
			done = doneSuffix(res.Done)
		}
		say(out, "job %s: %s %s; next_index %d%s", job.ID, plural(res.Calls, "call"), change(res.AllKeys()), res.NextIndex, done)
	}
	return err
}

// isTerminal is whether w is a terminal (the progress bar is drawn there
// only).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// interruptedError is a drain stopped by a signal. Its exit status is 128
// plus the signal's number, as a shell reports a process the signal ended.
type interruptedError struct {
	signal syscall.Signal
	err    error // what else went wrong, if anything
}

// Error says which signal stopped the drain and what became of the chunk in
// flight.
func (e *interruptedError) Error() string {
	s := fmt.Sprintf("interrupted by %s: the chunk in flight, if any, was cancelled and rolled back; "+
		"what this drain committed is printed above", signalName(e.signal))
	if e.err != nil {
		s += "; also: " + e.err.Error()
	}
	return s
}

// Unwrap returns the other error, if any.
func (e *interruptedError) Unwrap() error { return e.err }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// cancelOnSignal returns a context that is cancelled at the first SIGINT or
// SIGTERM, and interrupted, which says which signal that was (0 before
// one). After the first, the signals have their default effect again, so a
// second one ends the process at once. release stops listening.
func cancelOnSignal(parent context.Context) (ctx context.Context, interrupted func() syscall.Signal, release func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	var mu sync.Mutex
	var got syscall.Signal
	quit := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			mu.Lock()
			got = s.(syscall.Signal)
			mu.Unlock()
			cancel()
		case <-quit:
		}
	}()
	interrupted = func() syscall.Signal {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
	return ctx, interrupted, func() {
		signal.Stop(sigs)
		close(quit)
		cancel()
	}
}

// drainersError is the failures of some of the --workers drainers, each
// named: "drainer 2 of 3: ...".
type drainersError struct {
	n    int
	who  []int // 1-based
	errs []error
}

// Error is one line naming each failed drainer and its error.
func (e *drainersError) Error() string {
	parts := make([]string, len(e.errs))
	for i, err := range e.errs {
		parts[i] = fmt.Sprintf("drainer %d of %d: %v", e.who[i], e.n, err)
	}
	return strings.Join(parts, "; ")
}

// Unwrap returns the drainers' errors.
func (e *drainersError) Unwrap() []error { return e.errs }

// drainWorkers runs n drains of one job at once (each a call of drain) and
// combines their results. Drainers that all fail the same way (an unknown
// job, a refused connection) say it once; otherwise each failed one is
// named. When ctx is cancelled, the drainers' cancellations are not errors
// of their own.
func drainWorkers(ctx context.Context, n int, drain func(context.Context) (driver.DrainResult, error)) (driver.DrainResult, error) {
	results := make([]driver.DrainResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = drain(ctx)
		}()
	}
	wg.Wait()
	out := driver.DrainResult{Processed: []int64{}}
	for _, r := range results {
		out.Calls += r.Calls
		out.Processed = append(out.Processed, r.Processed...)
		out.Keys = append(out.Keys, r.Keys...)
		out.NextIndex = max(out.NextIndex, r.NextIndex)
		out.Done = out.Done || r.Done
	}
	slices.Sort(out.Processed)
	slices.SortFunc(out.Keys, func(a, b driver.Key) int { return strings.Compare(a.String(), b.String()) })
	failed := &drainersError{n: n}
	for i, err := range errs {
		if err != nil && !(ctx.Err() != nil && cancelled(err)) {
			failed.who, failed.errs = append(failed.who, i+1), append(failed.errs, err)
		}
	}
	switch {
	case len(failed.errs) == 0:
		return out, nil
	case len(failed.errs) == n && !slices.ContainsFunc(failed.errs, func(err error) bool { return err.Error() != failed.errs[0].Error() }):
		return out, failed.errs[0] // one worker, or all failing alike
	}
	return out, failed
}

// cancelled is whether err is what a cancelled context makes of a call: the
// context's error, or the server's "canceling statement due to user
// request" after the cancel request.
func cancelled(err error) bool {
	var pgErr *pgconn.PgError
	return errors.Is(err, context.Canceled) || errors.As(err, &pgErr) && pgErr.Code == pgerrcode.QueryCanceled
}

// showProgress draws the job's progress on d.stderr, in ids (done / all, and
// ids per second), reading it from the database (through the router when
// tenant is given), until the returned stop is called; stop clears the bar.
func showProgress(ctx context.Context, d deps, ref driver.JobRef, pacer *pace.Pacer) (stop func() error) {
	jobID := ref.ID
	conn, err := d.connect(ctx)
	if err != nil {
		return func() error { return err }
	}
	job, err := ref.Inspect(ctx, conn)
	if err != nil || job == nil {
		return func() error { return errors.Join(err, conn.Close(context.WithoutCancel(ctx))) }
	}
	bar := progressbar.NewOptions(len(job.Targets),
		progressbar.OptionSetWriter(d.stderr),
		progressbar.OptionSetDescription("job "+jobID+": ids"),
		progressbar.OptionShowCount(), // (ids done/all)
		progressbar.OptionThrottle(50*time.Millisecond))
	done := make(chan struct{})
	finished := make(chan error, 1)
	go func() {
		var perr error
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		start, first := time.Now(), job.NextIndex
		for perr == nil {
			var next int
			if next, perr = nextIndex(ctx, conn, ref); perr != nil {
				break
			}
			rate := float64(next-first) / time.Since(start).Seconds()
			desc := fmt.Sprintf("job %s: ids, %.0f/s", jobID, rate)
			if st := pacer.State(); st.Throttled { // a nil pacer never throttles
				desc += ", throttled: " + st.Reason
			}
			bar.Describe(terminalSafe(desc))
			perr = bar.Set(next)
			select {
			case <-done:
				finished <- errors.Join(perr, bar.Clear(), conn.Close(context.WithoutCancel(ctx)))
				return
			case <-tick.C:
			}
		}
		<-done
		finished <- errors.Join(perr, bar.Clear(), conn.Close(context.WithoutCancel(ctx)))
	}()
	return func() error {
		close(done)
		return <-finished
	}
}

// nextIndex is the job's progress, for the bar.
func nextIndex(ctx context.Context, conn *pgx.Conn, ref driver.JobRef) (int, error) {
	job, err := ref.Inspect(ctx, conn) // an operator reads no table
	if err != nil {
		return 0, err
	}
	if job == nil {
		return 0, fmt.Errorf("job %s: not found", ref.ID)
	}
	return job.NextIndex, nil
}

// refuseRouter refuses pacing through a chunks router: the pacer reads the
// server it connects to, and a router is not the shard.
func refuseRouter(ctx context.Context, d deps) error {
	return d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		routed, err := driver.Routed(ctx, conn)
		if err == nil && routed {
			err = usagef("--max-replica-lag and --throttle-query read the server they connect to, and a chunks router is " +
				"not the shard: pace the shard's own workers (chunks worker --dsn SHARD --max-replica-lag ...)")
		}
		return err
	})
}

// paced is a pacer as driver.DrainConfig wants it: nil for no pacer.
func paced(p *pace.Pacer) driver.Pacer {
	if p == nil {
		return nil
	}
	return drainPacer{p}
}

// drainPacer is a pacer as driver.DrainConfig wants it.
type drainPacer struct{ p *pace.Pacer }

// Wait holds the next call while the pacer throttles.
func (d drainPacer) Wait(ctx context.Context) error { return d.p.Wait(ctx, nil) }

// Committed tells the pacer of a chunk this drain committed.
func (d drainPacer) Committed() { d.p.Committed() }
