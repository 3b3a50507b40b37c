package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/app/web"
)

// httpFlagDefs are the flags of the status page and metrics server
// (worker and serve). required: the command cannot run without --http.
func httpFlagDefs(required bool) []cli.Flag {
	usage := "serve the status page, /metrics, /healthz and /readyz on `ADDR` (host:port; no host means 127.0.0.1; off when empty)"
	if required {
		usage = "serve the status page, /metrics, /healthz and /readyz on `ADDR` (host:port; no host means 127.0.0.1; required)"
	}
	return []cli.Flag{
		&cli.StringFlag{Name: "http", Usage: usage},
		&cli.IntFlag{Name: "page-size", Value: web.DefaultPageSize, Usage: fmt.Sprintf("list at most `N` jobs per page, 1 to %d", web.MaxPageSize)},
		&cli.DurationFlag{Name: "refresh", Value: web.DefaultRefresh, Usage: "how often (`D`) the page asks for news, 100ms to 1m"},
	}
}

// httpServer is a bound status page and metrics server, not serving yet.
type httpServer struct {
	listener net.Listener
	handler  *web.Server
	pool     *pgxpool.Pool
	log      *slog.Logger
}

// httpOptions are the --http, --page-size and --refresh flags of the
// status page and metrics server (worker and serve).
type httpOptions struct {
	Addr     string        // --http: host:port; "" for no server
	PageSize int           // --page-size: jobs per page
	Refresh  time.Duration // --refresh: how often the page asks for news
}

// parseHTTP reads the --http flags.
func parseHTTP(c *cli.Context) httpOptions {
	return httpOptions{Addr: c.String("http"), PageSize: c.Int("page-size"), Refresh: c.Duration("refresh")}
}

// Validate checks the page size and the refresh (not the address: Listen
// does, as it binds).
func (o httpOptions) Validate() error {
	if o.PageSize < 1 || o.PageSize > web.MaxPageSize {
		return driver.Invalidf("page-size: must be between 1 and %d, got %d", web.MaxPageSize, o.PageSize)
	}
	if o.Refresh < web.MinRefresh || o.Refresh > web.MaxRefresh {
		return driver.Invalidf("refresh: must be between %v and %v, got %v", web.MinRefresh, web.MaxRefresh, o.Refresh)
	}
	return nil
}

// openHTTPServer opens a small pool of its own on cfg and binds o.Addr, for
// the schema (the page's title; "" for the DSN's search_path). o is
// validated. Close it when done (Serve does).
func openHTTPServer(ctx context.Context, schema string, cfg *pgxpool.Config, o httpOptions, metrics prometheus.Gatherer, log *slog.Logger) (*httpServer, error) {
	cfg = cfg.Copy()
	cfg.MaxConns = 2 // a page, a report or a scrape is one query
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	l, err := web.Listen(o.Addr)
	if err != nil {
		pool.Close()
		var addrErr *net.AddrError
		if errors.As(err, &addrErr) {
			return nil, driver.NewError(driver.ErrInvalid, err, "%v", err)
		}
		return nil, err
	}
	title := schema
	if title == "" {
		title = "the DSN's search_path"
	}
	h := &web.Server{DB: pool, Title: title, Metrics: metrics, PageSize: o.PageSize, Refresh: o.Refresh, Log: log}
	return &httpServer{listener: l, handler: h, pool: pool, log: log}, nil
}

// close releases the server without serving.
func (s *httpServer) close() error {
	s.pool.Close()
	return s.listener.Close()
}

// Serve serves until ctx ends, then closes the server and its pool. It
// warns at once when the page cannot be served yet (the database does not
// answer, or chunks is not installed), and serves anyway: /readyz says so
// until it can.
func (s *httpServer) Serve(ctx context.Context) error {
	defer s.pool.Close()
	if err := s.handler.Ready(ctx); err != nil {
		s.log.Warn("the status page cannot show the fleet yet; /readyz answers 503 until it can", "error", err)
	}
	return web.Serve(ctx, s.listener, s.handler.Handler(), s.log)
}
