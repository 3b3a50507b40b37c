package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/pace"
)

// paceFlagDefs are the pacing flags of worker and drain.
func paceFlagDefs() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "max-replica-lag", Usage: "hold new chunks while any standby streaming from the server is more than `D` behind in replay (0: off; needs pg_monitor)"},
		&cli.StringFlag{Name: "throttle-query", Usage: "hold new chunks while this `SQL` (one boolean, run read-only) returns true; an error holds too"},
		&cli.DurationFlag{Name: "check-interval", Value: pace.DefaultCheckInterval, Usage: "read the replica lag and the throttle query at most every `D`"},
	}
}

// paceFlags is the pacing that --max-replica-lag, --throttle-query and
// --check-interval ask for (worker and drain).
func paceFlags(c *cli.Context) pace.Config {
	return pace.Config{
		MaxReplicaLag: c.Duration("max-replica-lag"),
		ThrottleQuery: c.String("throttle-query"),
		CheckInterval: c.Duration("check-interval"),
	}
}

// newPacer is drain's pacer, on a pool of one connection of its own, or nil
// when no pacing was asked for. It logs throttling on stderr.
func newPacer(ctx context.Context, cfg *pgx.ConnConfig, pacing pace.Config, stderr io.Writer) (*pace.Pacer, func(), error) {
	if pacing.Off() {
		return nil, func() {}, nil
	}
	pcfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, nil, err
	}
	pcfg.ConnConfig = cfg.Copy()
	pcfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, nil, err
	}
	p, err := pace.New(pacing, pool, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return p, func() { p.Close(); pool.Close() }, nil
}
