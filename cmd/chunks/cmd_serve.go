package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/internal/app/metrics"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "serve the status page and the database's gauges, without running a worker (for a dashboard host)",
		UsageText: "chunks serve --http ADDR [--page-size N] [--refresh D] [--dsn DSN] [--schema S] [--json]",
		Description: "Serves, until SIGTERM or SIGINT:\n" +
			"  /                the status page: every job with its progress, state, drift, rate and ETA,\n" +
			"                   every live worker, and each job's report (/jobs/JOB); it updates itself\n" +
			"  /api/status      the same as JSON (?after=JOB for the next page)\n" +
			"  /metrics         Prometheus gauges read from the database at each scrape: chunks_jobs{state},\n" +
			"                   chunks_unfinished_orders, chunks_live_workers{state},\n" +
			"                   chunks_longest_no_progress_seconds, chunks_database_up; and Go's and the process's\n" +
			"  /healthz         200 while the process runs\n" +
			"  /readyz          200 when the database answers and chunks is installed, else 503 and why\n" +
			"                   (a short reason: the error itself goes to the log); 503 naming both versions\n" +
			"                   when the database's chunks schema is older than this binary's, 200 with a\n" +
			"                   warning line when it is newer\n" +
			"Each page, refresh and scrape is one query, however many jobs there are. It is read-only and\n" +
			"answers GET only. No host in ADDR means 127.0.0.1. On loopback, a request whose Host is not\n" +
			"loopback (localhost, 127.0.0.1, [::1]) is 421; another address is served with a warning, to\n" +
			"any Host.\n\n" +
			"Example:\n  chunks --schema lab serve --http 127.0.0.1:8080     # then open http://127.0.0.1:8080/",
		Flags:  httpFlagDefs(true),
		Action: action(parseServe, runServe),
	}
}

// serveOptions is chunks serve --http ADDR [--page-size N] [--refresh D].
type serveOptions struct {
	HTTP httpOptions
}

// parseServe fills serveOptions from the command line (no arguments).
func parseServe(c *cli.Context) (*serveOptions, error) {
	_, err := positional(c)
	return &serveOptions{HTTP: parseHTTP(c)}, err
}

// Validate checks that there is an address, and the page's flags.
func (o *serveOptions) Validate() error {
	if o.HTTP.Addr == "" {
		return usagef("serve needs --http ADDR, e.g. --http 127.0.0.1:8080")
	}
	return o.HTTP.Validate()
}

// runServe serves the status page and the database's gauges until ctx ends
// or SIGTERM or SIGINT, logging on d.stderr (JSON with --json). It prints
// no result.
func runServe(ctx context.Context, d deps, o *serveOptions, _ io.Writer) error {
	cfg, err := d.poolConfig()
	if err != nil {
		return err
	}
	var handler slog.Handler = slog.NewTextHandler(d.stderr, nil)
	if d.json {
		handler = slog.NewJSONHandler(d.stderr, nil)
	}
	log := slog.New(handler)
	reg := metrics.NewRegistry()
	srv, err := openHTTPServer(ctx, d.schema, cfg, o.HTTP, reg, log)
	if err != nil {
		return err
	}
	if err := reg.Register(&metrics.Database{DB: srv.pool, Log: log}); err != nil {
		return errors.Join(err, srv.close())
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := srv.Serve(ctx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}
