package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/app/bench"
	"github.com/chunks-dev/chunks/internal/localpg"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:      "bench",
		Usage:     "measure chunk throughput and latency against the commit ceiling and a client-side baseline",
		UsageText: "chunks bench [--duration 3s] [--delay 1ms] [--scale=false] [--scenario NAME]... [--dsn DSN] [--json]",
		Description: "Every figure comes from one run on one server, so the ratios hold on a noisy machine.\n" +
			"Without --dsn it starts a throwaway local server with Postgres' default durability\n" +
			"(fsync and synchronous_commit on). Only a --dsn typed on this command line picks a server\n" +
			"of yours ($CHUNKS_DSN and $DATABASE_URL are ignored). It works in new schemas and drops them\n" +
			"at the end.\n" +
			"BENCHMARKS.md explains each scenario.\n\n" +
			"Example:\n  chunks bench\n  chunks bench --dsn 'postgres://me@db.internal/scratch' --duration 5s --json > bench.json\n" +
			"  chunks bench --scenario ceiling --scenario pacing",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "duration", Value: 3 * time.Second, Usage: "how long each scenario runs (under 1s: a smoke run, the fleet drains 100 jobs instead of 1,000)"},
			&cli.DurationFlag{Name: "delay", Value: time.Millisecond, Usage: "the network scenario's added delay, each way"},
			&cli.BoolFlag{Name: "scale", Value: true, Usage: "run the scale scenario (seeds 1,000,000 orders and 10,000 jobs)"},
			&cli.StringSliceFlag{Name: "scenario", Usage: "run only this scenario (repeat for more): " + strings.Join(bench.Scenarios, ", ")},
		},
		Action: action(parseBench, runBench),
	}
}

// benchOptions is chunks bench [--duration D] [--delay D] [--scale=false] [--scenario NAME]...
type benchOptions struct {
	Duration  time.Duration // each scenario's
	Delay     time.Duration // the network scenario's added delay, each way
	Scale     bool          // run the scale scenario
	Scenarios []string      // the scenarios to run; empty: all
	// DSN is a --dsn typed on this command line: only that picks the
	// server ($CHUNKS_DSN, the demo's, say, is not what "without --dsn, a
	// throwaway durable server" promises); "" starts a throwaway one.
	DSN string
}

// parseBench fills the flags and a --dsn typed here; it takes no arguments.
func parseBench(c *cli.Context) (*benchOptions, error) {
	dsn, _ := typed(c, "dsn")
	o := &benchOptions{Duration: c.Duration("duration"), Delay: c.Duration("delay"), Scale: c.Bool("scale"), Scenarios: c.StringSlice("scenario"), DSN: dsn}
	_, err := positional(c)
	return o, err
}

// Validate checks the durations and the scenarios' names.
func (o *benchOptions) Validate() error {
	if o.Duration <= 0 || o.Delay < 0 {
		return driver.Invalidf("duration: must be positive, and delay not negative")
	}
	return bench.ValidScenarios(o.Scenarios)
}

// runBench runs the scenarios (their log on d.stderr) and prints the
// report.
func runBench(ctx context.Context, d deps, o *benchOptions, out io.Writer) (err error) {
	dsnText := o.DSN
	var startStandby func(context.Context) (func() error, error)
	own := dsnText == ""
	if own {
		fmt.Fprintln(d.stderr, "starting a throwaway PostgreSQL server (default durability: fsync on)")
		// Checkpoints only when the bench asks (before each counted
		// scenario): a timed one, 5 minutes into a run, fell inside a
		// scenario and brought its full-page images into that scenario's
		// WAL per chunk (the fleet's read 2.40 x the floor's, 1.21 in the
		// run before).
		server, err := localpg.Start(ctx, localpg.Options{Durable: true, Settings: []string{"checkpoint_timeout=1h", "max_wal_size=10GB"}})
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
	report, err := bench.Run(ctx, bench.Options{
		Conn: cfg, Duration: o.Duration, Delay: o.Delay,
		Scale: o.Scale, Scenarios: o.Scenarios, Chunks: self, Log: d.stderr, StartStandby: startStandby, Checkpoint: own,
	})
	if err != nil {
		return err
	}
	if d.json {
		return printJSON(out, report)
	}
	printBench(out, report)
	return nil
}

// printBench prints the report as text: the machine, the results and the
// ratios against their goals.
func printBench(out io.Writer, r bench.Report) {
	say(out, "%s\n%s\n%s; fsync=%s synchronous_commit=%s full_page_writes=%s shared_buffers=%s",
		r.Date, r.CPU, r.Server, r.Settings["fsync"], r.Settings["synchronous_commit"],
		r.Settings["full_page_writes"], r.Settings["shared_buffers"])
	t := newTable(out, "scenario", "variant", "chunks/s", "orders/s", "mean ms", "p50 ms", "p99 ms", "round trips", "WAL B/chunk")
	for _, x := range r.Results {
		trips := ""
		if x.RoundTrips > 0 {
			trips = fmt.Sprintf("%.1f", x.RoundTrips)
		}
		latency := []any{fmt.Sprintf("%.3f", x.MeanMs), fmt.Sprintf("%.3f", x.P50Ms), fmt.Sprintf("%.3f", x.P99Ms)}
		if x.MeanMs == 0 { // timed as a whole (fleet throughput), not chunk by chunk
			latency = []any{"", "", ""}
		}
		wal := ""
		if x.WALBytesPerChunk > 0 {
			wal = fmt.Sprintf("%.0f", x.WALBytesPerChunk)
		}
		t.AppendRow(append([]any{x.Scenario, x.Variant, fmt.Sprintf("%.0f", x.ChunksPerS), fmt.Sprintf("%.0f", x.OrdersPerS)},
			append(latency, trips, wal)...))
	}
	t.Render()
	g := newTable(out, "ratio", "measured", "goal", "met")
	for _, x := range r.Ratios {
		met := "yes"
		if !x.Met {
			met = "NO"
		}
		g.AppendRow([]any{x.Name, fmt.Sprintf("%.2f", x.Value), x.Goal, met})
	}
	g.Render()
	if len(r.Pairs) > 0 {
		say(out, "side by side (the goal is the median of the rounds' ratios; the two run in turn, A B, B A, ...):")
		p := newTable(out, "pair", "A", "B", "A/B, round by round", "median")
		for _, x := range r.Pairs {
			rounds := make([]string, len(x.Rounds))
			for i, v := range x.Rounds {
				rounds[i] = fmt.Sprintf("%.2f", v)
			}
			p.AppendRow([]any{x.Name, x.A, x.B, strings.Join(rounds, " "), fmt.Sprintf("%.2f", x.Median)})
		}
		p.Render()
	}
	say(out, "the baseline leaves exactly the orders and audit RunChunk leaves: %t; the floor: %t", r.Equivalent, r.FloorEquivalent)
}
