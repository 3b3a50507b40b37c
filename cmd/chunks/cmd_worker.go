package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/app/metrics"
	"github.com/chunks-dev/chunks/pace"
)

func workerCommand() *cli.Command {
	return &cli.Command{
		Name:  "worker",
		Usage: "run registered jobs from the queue, one chunk per pass, until SIGTERM or SIGINT",
		UsageText: "chunks worker [--concurrency N] [--poll D] [--rate R] [--retry-delay D] [--chunk-time D] [--slice D] [--slice-chunks N]\n" +
			"                     [--id ID] [--verbose] [--http ADDR]\n" +
			"                     [--dsn DSN] [--schema S] [--json]",
		Description: "Each pass is one transaction (SQL run_next_chunk): it takes the next queued job (SKIP LOCKED),\n" +
			"runs one chunk of it, and puts it back at the end of the queue, or removes it when it is done,\n" +
			"all in one commit. A worker killed with SIGKILL loses nothing and holds nothing: its job is\n" +
			"runnable again at once. A chunk that fails with a transient error (a lock or statement timeout,\n" +
			"a serialization failure, a deadlock, the server shutting down, a lost connection) makes its job\n" +
			"rest --retry-delay; any other error, a conflict or a trigger's exception say, pauses the job with\n" +
			"the reason (see it in chunks status; fix it, then chunks resume JOB).\n" +
			"Idle passes wake on NOTIFY and otherwise poll every --poll.\n\n" +
			"At start it waits for the database while it is down, starting up, out of connection slots or a\n" +
			"standby not yet promoted, logging every attempt (100 ms, doubling to 5 s); a wrong user, password\n" +
			"or database, or a schema without chunks, exits 1 at once; an --id that a live worker holds on\n" +
			"the server exits 2, naming it. A chunks schema older than this binary's (chunks version) exits\n" +
			"1, naming both versions, before any chunk; on a newer one it logs a warning and runs. Once\n" +
			"running it never stops on a database error: it logs it and tries again.\n\n" +
			"Run chunks migrate first: the worker never migrates. The log goes to stderr (JSON lines with\n" +
			"--json; every chunk with --verbose); \"msg=ready\" says it is running. SIGTERM or SIGINT\n" +
			"finishes the chunks in flight, starts no new one, prints a summary and exits 0; a second\n" +
			"signal cancels the chunks in flight (they roll back) and exits 1.\n\n" +
			"With --max-replica-lag or --throttle-query it holds new chunks while a standby is too far behind\n" +
			"or the query returns true (docs/production.md \"Protecting production\"), and says so in its log and in\n" +
			"chunks status.\n\n" +
			"A pass that takes a job runs up to --slice-chunks of its chunks back to back, for up to --slice\n" +
			"(docs/fleet.md \"Slices\"), each its own commit, before the job goes behind every waiting job;\n" +
			"pause, --rate and pacing still take effect at the next chunk, and a killed worker's job is free\n" +
			"at once. --slice-chunks 1: one chunk per claim.\n\n" +
			"A declared change's chunks adapt (docs/fleet.md \"Adaptive chunk size\"): its plan approves the\n" +
			"largest chunk, and the worker asks for smaller ones while the pacer holds chunks back (half the\n" +
			"last) or a chunk takes longer than --chunk-time (in proportion), growing back by half a chunk\n" +
			"while neither happens. Each chunk's size is on the record (change_chunks); an orders job's\n" +
			"chunks are its chunk_size.\n\n" +
			"With --http ADDR it serves, while it runs, its Prometheus metrics at /metrics, /healthz, /readyz\n" +
			"and the status page at / (docs/production.md \"Seeing it run\"). No host in ADDR means 127.0.0.1. On\n" +
			"loopback, a request whose Host is not loopback (localhost, 127.0.0.1, [::1]) is 421.\n\n" +
			"Example:\n  chunks --schema lab worker --concurrency 4 --poll 1s\n" +
			"  chunks --schema lab worker --max-replica-lag 500ms\n" +
			"  chunks --schema lab worker --rate 0.5        # each job at most one chunk every 2 s\n" +
			"  chunks --schema lab worker --http 127.0.0.1:9187   # scrape http://127.0.0.1:9187/metrics",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "concurrency", Value: 1, Usage: fmt.Sprintf("run `N` passes at once, 1 to %d", fleet.MaxConcurrency)},
			&cli.DurationFlag{Name: "poll", Value: fleet.DefaultPoll, Usage: fmt.Sprintf("how often (`D`) an idle pass looks at the queue without a notification, %v to %v (0: the default)", fleet.MinPoll, fleet.MaxDuration)},
			&cli.Float64Flag{Name: "rate", Value: 0, Usage: fmt.Sprintf("at most `R` chunks per second per job, 1/86400 to %d (0: no limit)", fleet.MaxRate)},
			&cli.DurationFlag{Name: "retry-delay", Value: fleet.DefaultRetryDelay, Usage: fmt.Sprintf("how long (`D`) a job rests after its chunk failed with a transient error (a lock or statement timeout, a deadlock...), 1ms to %v (0: the default)", fleet.MaxDuration)},
			&cli.DurationFlag{Name: "chunk-time", Value: fleet.DefaultChunkTime, Usage: fmt.Sprintf("the target time (`D`) of a declared change's chunk: a longer one makes the next ones smaller, 1ms to %v (0: the default)", fleet.MaxDuration)},
			&cli.DurationFlag{Name: "slice", Value: fleet.DefaultSlice, Usage: fmt.Sprintf("how long (`D`) a pass may run one job's chunks back to back, 1ms to %v (0: the default)", fleet.MaxDuration)},
			&cli.IntFlag{Name: "slice-chunks", Value: fleet.DefaultSliceChunks, Usage: fmt.Sprintf("at most `N` chunks of one job back to back, 1 (no slices) to %d", fleet.MaxSliceChunks)},
			&cli.StringFlag{Name: "id", Usage: "the worker's name (`ID`) in the log, in chunks status and in a pause it makes: 1 to 63 printable ASCII characters, one live worker per id (default, also when empty: hostname:pid)"},
			&cli.BoolFlag{Name: "verbose", Usage: "log every chunk"},
		}, append(paceFlagDefs(), httpFlagDefs(false)...)...),
		Action: action(parseWorker, runWorker),
	}
}

// workerOptions is chunks worker [flags]: the worker's settings as typed.
type workerOptions struct {
	ID          string // --id; "" is fleet.DefaultID (hostname:pid)
	Concurrency int
	Poll        time.Duration
	Rate        float64
	RetryDelay  time.Duration
	ChunkTime   time.Duration // --chunk-time: a declared change's chunk's target time
	Slice       time.Duration // --slice: how long a slice runs one job's chunks back to back
	SliceChunks int           // --slice-chunks: how many chunks a slice runs at most
	Verbose     bool          // --verbose: log every chunk
	Pace        pace.Config   // --max-replica-lag, --throttle-query, --check-interval
	HTTP        httpOptions   // --http, --page-size, --refresh
}

// parseWorker fills the worker's settings; it takes no arguments.
func parseWorker(c *cli.Context) (*workerOptions, error) {
	o := &workerOptions{ID: c.String("id"), Concurrency: c.Int("concurrency"), Poll: c.Duration("poll"),
		Rate: c.Float64("rate"), RetryDelay: c.Duration("retry-delay"), ChunkTime: c.Duration("chunk-time"),
		Slice: c.Duration("slice"), SliceChunks: c.Int("slice-chunks"), Verbose: c.Bool("verbose"),
		Pace: paceFlags(c), HTTP: parseHTTP(c)}
	_, err := positional(c)
	return o, err
}

// id is the worker's id: --id, or hostname:pid.
func (o *workerOptions) id() string { return cmp.Or(o.ID, fleet.DefaultID()) }

// worker is the fleet.Worker of the options, on pool, logging to log.
func (o *workerOptions) worker(pool *pgxpool.Pool, log *slog.Logger) *fleet.Worker {
	return &fleet.Worker{Pool: pool, ID: o.id(), Concurrency: o.Concurrency, Poll: o.Poll, Rate: o.Rate,
		RetryDelay: o.RetryDelay, ChunkTime: o.ChunkTime, Slice: o.Slice, SliceChunks: o.SliceChunks, Pace: o.Pace, Logger: log}
}

// Validate checks every setting, as fleet.Worker.Validate does (the id
// also here first, naming the flag: the worker's id names the pool's
// connections; and the flag's 0 is not the field's 1), and the http flags.
func (o *workerOptions) Validate() error {
	if err := fleet.CheckID("--id", o.id()); err != nil {
		return err
	}
	if err := fleet.CheckConcurrency(o.Concurrency); err != nil {
		return err
	}
	if o.SliceChunks < 1 || o.SliceChunks > fleet.MaxSliceChunks { // the field's 0 is the default; the flag's is not
		return driver.Invalidf("slice-chunks: must be between 1 (no slices) and %d, got %d", fleet.MaxSliceChunks, o.SliceChunks)
	}
	// fleet's Validate asks only that there is a pool; runWorker gives
	// it the real one, which connects nothing before Start either.
	if err := o.worker(new(pgxpool.Pool), nil).Validate(); err != nil {
		return err
	}
	return o.HTTP.Validate()
}

// runWorker runs the worker until a signal stops it (the log on d.stderr),
// then prints what it did.
func runWorker(ctx context.Context, d deps, o *workerOptions, out io.Writer) error {
	level := slog.LevelInfo
	if o.Verbose {
		level = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: level}
	var handler slog.Handler = slog.NewTextHandler(d.stderr, opts)
	if d.json {
		handler = slog.NewJSONHandler(d.stderr, opts)
	}
	cfg, err := d.poolConfig() // with the connect timeout, and cancel requests: an aborting worker's chunks roll back
	if err != nil {
		return err
	}
	// Each pass holds one connection at a time; one more for pacing
	// (the heartbeat has its own).
	cfg.MaxConns = int32(o.Concurrency) + 1
	// chunks status shows which worker runs a chunk by this name,
	// unless the DSN names the connections itself.
	id := o.id()
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = id
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg) // it connects nothing yet
	if err != nil {
		return err
	}
	defer pool.Close()
	w := o.worker(pool, slog.New(handler))
	log := w.Logger.With("worker", w.ID)
	var srv *httpServer
	if o.HTTP.Addr != "" {
		reg := metrics.NewRegistry()
		if w.Observer, err = metrics.NewWorker(reg, w.Pacing, w.Pace.MaxReplicaLag > 0, w.ChunkRows); err != nil {
			return err
		}
		if srv, err = openHTTPServer(ctx, d.schema, cfg, o.HTTP, reg, log); err != nil {
			return err
		}
	}
	switch err := runWithHTTP(ctx, w, srv, log); {
	case errors.Is(err, fleet.ErrStopped): // a signal while it waited for the database: a clean stop
	case errors.Is(err, fleet.ErrAborted):
		return fmt.Errorf("worker %s: %w", w.ID, err)
	case err != nil:
		return err
	}
	st := w.Stats()
	if d.json {
		return printJSON(out, map[string]any{"worker": w.ID, "chunks": st.Chunks, "jobs_done": st.JobsDone,
			"conflicts": st.Conflicts, "error_pauses": st.ErrorPauses, "failures": st.Failures})
	}
	say(out, "worker %s stopped: %s committed, %s finished, %s paused after a conflict, %d after another error, %s",
		w.ID, plural(int(st.Chunks), "chunk"), plural(int(st.JobsDone), "job"),
		plural(int(st.Conflicts), "job"), st.ErrorPauses, plural(int(st.Failures), "failed chunk"))
	return nil
}

// runWithHTTP runs the worker until a signal stops it
// ([runUntilSignalled]), and srv (when not nil) beside it until the worker
// has stopped: the page and /metrics stay up while the chunks in flight
// finish.
func runWithHTTP(ctx context.Context, w *fleet.Worker, srv *httpServer, log *slog.Logger) error {
	if srv == nil {
		return runUntilSignalled(ctx, w, log)
	}
	serving, cancel := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serving) }()
	err := runUntilSignalled(ctx, w, log)
	cancel()
	return errors.Join(err, <-served)
}

// runUntilSignalled starts w and stops it at the first SIGTERM or SIGINT
// (Stop: the chunks in flight finish, no new one starts) and cancels the
// chunks in flight at the second (StopAndCancel: they roll back), also
// while Start still waits for the database. It returns once the worker has
// stopped: Start's error (fleet.ErrStopped after a signal while it
// started), fleet.ErrAborted after a second signal, or nil.
func runUntilSignalled(ctx context.Context, w *fleet.Worker, log *slog.Logger) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	started := make(chan error, 1)
	go func() { started <- w.Start(ctx) }()
	var stopped chan error // Stop's outcome, once the first signal came
	for {
		select {
		case err := <-started:
			if err != nil {
				return err
			}
			started = nil // running: wait for a signal
		case s := <-sigs:
			if stopped == nil {
				log.Info("signal: finishing the chunks in flight; a second signal cancels them", "signal", s.String())
				stopped = make(chan error, 1)
				go func() { stopped <- w.Stop(ctx) }()
				continue
			}
			log.Warn("second signal: cancelling the chunks in flight", "signal", s.String())
			if err := w.StopAndCancel(ctx); err != nil {
				return err
			}
			return <-stopped // ErrAborted, or nil when the chunks had finished already
		case err := <-stopped:
			return err
		}
	}
}
