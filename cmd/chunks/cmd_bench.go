package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/bench"
	"github.com/chunks-dev/chunks/internal/localpg"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:      "bench",
		Usage:     "measure chunk throughput and latency against the commit ceiling and a client-side baseline",
		UsageText: "chunks bench [--duration 3s] [--delay 1ms] [--scale=false] [--dsn DSN] [--json]",
		Description: "Every figure comes from one run on one server, so the ratios hold on a noisy machine.\n" +
			"Without --dsn it starts a throwaway local server with Postgres' default durability\n" +
			"(fsync and synchronous_commit on). Only a --dsn typed on this command line picks a server\n" +
			"of yours ($CHUNKS_DSN and $DATABASE_URL are ignored). It works in new schemas and drops them\n" +
			"at the end.\n" +
			"BENCHMARKS.md explains each scenario.\n\n" +
			"Example:\n  chunks bench\n  chunks bench --dsn 'postgres://me@db.internal/scratch' --duration 5s --json > bench.json",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "duration", Value: 3 * time.Second, Usage: "how long each scenario runs (under 1s: a smoke run, the fleet drains 100 jobs instead of 1,000)"},
			&cli.DurationFlag{Name: "delay", Value: time.Millisecond, Usage: "the network scenario's added delay, each way"},
			&cli.BoolFlag{Name: "scale", Value: true, Usage: "run the scale scenario (seeds 1,000,000 orders and 10,000 jobs)"},
		},
		Action: func(c *cli.Context) (err error) {
			if _, err := positional(c); err != nil {
				return err
			}
			if c.Duration("duration") <= 0 || c.Duration("delay") < 0 {
				return driver.Invalidf("duration: must be positive, and delay not negative")
			}
			// Only a --dsn typed here picks the server: an exported
			// $CHUNKS_DSN (the demo's, say) is not what "without --dsn, a
			// throwaway durable server" promises.
			dsnText, _ := typed(c, "dsn")
			var startStandby func(context.Context) (func() error, error)
			if dsnText == "" {
				fmt.Fprintln(os.Stderr, "starting a throwaway PostgreSQL server (default durability: fsync on)")
				server, err := localpg.Start(c.Context, localpg.Options{Durable: true})
				if err != nil {
					return err
				}
				defer func() { err = errors.Join(err, server.Stop()) }()
				dsnText = server.DSN()
				// The pacing scenario needs a standby: only on a server of its own.
				startStandby = func(ctx context.Context) (func() error, error) {
					standby, err := server.StartStandby(ctx, localpg.StandbyOptions{})
					if err != nil {
						return nil, err
					}
					return standby.Stop, nil
				}
			}
			cfg, err := driver.ParseDSN(dsnText)
			if err != nil {
				return err
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			report, err := bench.Run(c.Context, bench.Options{
				Conn: cfg, Duration: c.Duration("duration"), Delay: c.Duration("delay"),
				Scale: c.Bool("scale"), Chunks: self, Log: os.Stderr, StartStandby: startStandby,
			})
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(stdout, report)
			}
			printBench(report)
			return nil
		},
	}
}

func printBench(r bench.Report) {
	say(stdout, "%s\n%s\n%s; fsync=%s synchronous_commit=%s full_page_writes=%s shared_buffers=%s",
		r.Date, r.CPU, r.Server, r.Settings["fsync"], r.Settings["synchronous_commit"],
		r.Settings["full_page_writes"], r.Settings["shared_buffers"])
	t := newTable(stdout, "scenario", "variant", "chunks/s", "orders/s", "mean ms", "p50 ms", "p99 ms", "round trips")
	for _, x := range r.Results {
		trips := ""
		if x.RoundTrips > 0 {
			trips = fmt.Sprintf("%.1f", x.RoundTrips)
		}
		latency := []any{fmt.Sprintf("%.3f", x.MeanMs), fmt.Sprintf("%.3f", x.P50Ms), fmt.Sprintf("%.3f", x.P99Ms)}
		if x.MeanMs == 0 { // timed as a whole (fleet throughput), not chunk by chunk
			latency = []any{"", "", ""}
		}
		t.AppendRow(append([]any{x.Scenario, x.Variant, fmt.Sprintf("%.0f", x.ChunksPerS), fmt.Sprintf("%.0f", x.OrdersPerS)},
			append(latency, trips)...))
	}
	t.Render()
	g := newTable(stdout, "ratio", "measured", "goal", "met")
	for _, x := range r.Ratios {
		met := "yes"
		if !x.Met {
			met = "NO"
		}
		g.AppendRow([]any{x.Name, fmt.Sprintf("%.2f", x.Value), x.Goal, met})
	}
	g.Render()
	say(stdout, "the baseline leaves exactly the orders and audit RunChunk leaves: %t", r.Equivalent)
}
