package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
)

func workerCommand() *cli.Command {
	return &cli.Command{
		Name:  "worker",
		Usage: "run registered jobs from the queue, one chunk per pass, until SIGTERM or SIGINT",
		UsageText: "chunks worker [--concurrency N] [--lease D] [--poll D] [--rate R] [--id ID] [--verbose]\n" +
			"                     [--dsn DSN] [--schema S] [--json]",
		Description: "Each pass claims the next queued job (SKIP LOCKED, with a lease of --lease), runs one chunk of\n" +
			"it, and puts it back at the end of the queue, or removes it when it is done. A worker killed\n" +
			"with SIGKILL loses nothing: its jobs become claimable again when their leases end. A chunk\n" +
			"that meets a conflict pauses its job (fix it, then chunks resume JOB); other errors make the\n" +
			"job rest a second. Idle passes wake on NOTIFY and otherwise poll every --poll.\n\n" +
			"Run chunks migrate first: the worker never migrates. The log goes to stderr (JSON lines with\n" +
			"--json; every chunk with --verbose); \"msg=ready\" says it is running. SIGTERM or SIGINT\n" +
			"finishes the chunks in flight, starts no new one, prints a summary and exits 0; a second\n" +
			"signal cancels the chunks in flight (they roll back) and exits 1.\n\n" +
			"Example:\n  chunks --schema lab worker --concurrency 4 --lease 5s --poll 1s\n" +
			"  chunks --schema lab worker --rate 0.5        # each job at most one chunk every 2 s",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "concurrency", Value: 1, Usage: fmt.Sprintf("run `N` passes at once, 1 to %d", fleet.MaxConcurrency)},
			&cli.DurationFlag{Name: "lease", Value: fleet.DefaultLease, Usage: "how long (`D`, e.g. 5s) a claimed job stays this worker's before another may take it over"},
			&cli.DurationFlag{Name: "poll", Value: fleet.DefaultPoll, Usage: "how often (`D`) an idle pass looks at the queue without a notification"},
			&cli.Float64Flag{Name: "rate", Value: 0, Usage: "at most `R` chunks per second per job (0: no limit)"},
			&cli.StringFlag{Name: "id", Usage: "the worker's name (`ID`) in the queue and the log (default: hostname:pid)"},
			&cli.BoolFlag{Name: "verbose", Usage: "log every chunk"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usagef("worker takes no arguments, got %q (flags go before arguments)", c.Args().Slice())
			}
			n := c.Int("concurrency")
			if n < 1 || n > fleet.MaxConcurrency {
				return &driver.Error{Kind: driver.ErrInvalid, Msg: fmt.Sprintf("concurrency: must be between 1 and %d, got %d", fleet.MaxConcurrency, n)}
			}
			d, err := dsn(c)
			if err != nil {
				return err
			}
			cfg, err := pgxpool.ParseConfig(d)
			if err != nil {
				return &driver.Error{Kind: driver.ErrInvalid, Msg: "dsn: " + err.Error(), Err: err}
			}
			cfg.ConnConfig.ConnectTimeout = driver.ConnectTimeout
			cfg.MaxConns = int32(n) // each pass holds one connection at a time
			pool, err := pgxpool.NewWithConfig(c.Context, cfg)
			if err != nil {
				return err
			}
			defer pool.Close()

			level := slog.LevelInfo
			if c.Bool("verbose") {
				level = slog.LevelDebug
			}
			opts := &slog.HandlerOptions{Level: level}
			var handler slog.Handler = slog.NewTextHandler(os.Stderr, opts)
			if jsonOut(c) {
				handler = slog.NewJSONHandler(os.Stderr, opts)
			}
			w := &fleet.Worker{
				Pool:        pool,
				ID:          c.String("id"),
				Concurrency: n,
				Lease:       c.Duration("lease"),
				Poll:        c.Duration("poll"),
				Rate:        c.Float64("rate"),
				Logger:      slog.New(handler),
			}
			if w.ID == "" {
				w.ID = fleet.DefaultID()
			}
			stop, abort, release := stopOnSignals(c.Context, w.Logger.With("worker", w.ID))
			defer release()
			if err := w.Run(stop, abort); err != nil {
				if errors.Is(err, fleet.ErrAborted) {
					return fmt.Errorf("worker %s: %w", w.ID, err)
				}
				return err
			}
			st := w.Stats()
			if jsonOut(c) {
				return printJSON(map[string]any{"worker": w.ID, "chunks": st.Chunks, "jobs_done": st.JobsDone,
					"conflicts": st.Conflicts, "failures": st.Failures})
			}
			say("worker %s stopped: %s committed, %s finished, %s paused after a conflict, %s",
				w.ID, plural(int(st.Chunks), "chunk"), plural(int(st.JobsDone), "job"),
				plural(int(st.Conflicts), "job"), plural(int(st.Failures), "failed chunk"))
			return nil
		},
	}
}

// stopOnSignals returns stop, which ends at the first SIGTERM or SIGINT,
// and abort, which ends at the second. release stops listening for them.
func stopOnSignals(parent context.Context, log *slog.Logger) (stop, abort context.Context, release func()) {
	stop, cancelStop := context.WithCancel(parent)
	abort, cancelAbort := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			log.Info("signal: finishing the chunks in flight; a second signal cancels them", "signal", s.String())
			cancelStop()
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			log.Warn("second signal: cancelling the chunks in flight", "signal", s.String())
			cancelAbort()
		case <-done:
		}
	}()
	return stop, abort, func() {
		signal.Stop(sigs)
		close(done)
		cancelStop()
		cancelAbort()
	}
}
