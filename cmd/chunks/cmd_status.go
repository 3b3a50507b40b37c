package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/fleet"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show every job: progress, queued / running / paused / done / idle, and drift",
		UsageText: "chunks status [--dsn DSN] [--schema S] [--json]",
		Description: "progress is next_index/n. state: queued (runnable; \"rests until\" a --rate or retry delay\n" +
			"ends), running (a chunk of it is in flight, in the worker shown), paused (with who paused it,\n" +
			"when and why; chunks resume JOB), done, or idle (unfinished but not queued; chunks resume JOB\n" +
			"queues it). drift counts the committed orders that chunks report calls drifted or missing.\n" +
			"One query; nothing is written or locked.\n\n" +
			"Then the live workers (a heartbeat in the last 10 s): running, idle, or throttled and why.\n" +
			"Through a chunks router (its --dsn), every shard's jobs and workers, asked at once, with a shard\n" +
			"column; a shard that cannot be reached fails it, naming the shard.\n" +
			"--json prints {\"jobs\": [...], \"workers\": [...]}.\n\n" +
			"Example:\n  chunks --schema lab status\n  chunks --schema lab status --json | jq '.jobs[] | select(.state == \"paused\")'",
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usagef("status takes no arguments, got %s", argList(c.Args().Slice()))
			}
			var list []fleet.JobStatus
			var workers []fleet.WorkerStatus
			var now time.Time
			err := withConn(c, func(ctx context.Context, conn *pgx.Conn) (err error) {
				if list, err = fleet.Status(ctx, conn); err != nil {
					return err
				}
				if workers, err = fleet.Workers(ctx, conn); err != nil {
					return err
				}
				return conn.QueryRow(ctx, "select now()").Scan(&now)
			})
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(map[string]any{"jobs": list, "workers": workers})
			}
			printStatus(list, now)
			printWorkers(workers, now)
			return nil
		},
	}
}

func printStatus(list []fleet.JobStatus, now time.Time) {
	if len(list) == 0 {
		say("no jobs")
		return
	}
	count := map[string]int{}
	drift := 0
	routed := list[0].Shard != "" // read through a chunks router
	t := newTable(shardFirst(routed, "shard", "job", "tenant", "progress", "state", "detail", "drift")...)
	for _, j := range list {
		count[j.State]++
		detail, d := "", "?"
		switch {
		case j.State == fleet.StateRunning && j.RunningIn != nil:
			detail = "in " + *j.RunningIn
		case j.State == fleet.StatePaused && j.PausedAt != nil:
			detail = fmt.Sprintf("at %s by %s: %s", j.PausedAt.Local().Format("15:04:05"), deref(j.PausedBy), deref(j.PauseReason))
		case j.VisibleAt != nil && j.VisibleAt.After(now):
			detail = "rests until " + j.VisibleAt.Local().Format("15:04:05.000")
		}
		if j.Drift != nil {
			d = fmt.Sprint(*j.Drift)
			drift += *j.Drift
		}
		t.AppendRow(shardFirst(routed, terminalSafe(j.Shard), terminalSafe(j.JobID), terminalSafe(j.Tenant), fmt.Sprintf("%d/%d", j.NextIndex, j.N), j.State, terminalSafe(detail), d))
	}
	t.Render()
	var parts []string
	for _, s := range []string{fleet.StateQueued, fleet.StateRunning, fleet.StatePaused, fleet.StateDone, fleet.StateIdle} {
		if count[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[s], s))
		}
	}
	say("%s: %s; %s drifted or missing", plural(len(list), "job"), strings.Join(parts, ", "), plural(drift, "order"))
}

// shardFirst is a row of the status tables: with its first cell, the shard,
// only when the status was read through a router.
func shardFirst(routed bool, shard any, cells ...any) []any {
	if routed {
		return append([]any{shard}, cells...)
	}
	return cells
}

func deref(s *string) string {
	if s == nil {
		return "?"
	}
	return *s
}

func printWorkers(workers []fleet.WorkerStatus, now time.Time) {
	if len(workers) == 0 {
		say("no live workers")
		return
	}
	routed := workers[0].Shard != ""
	t := newTable(shardFirst(routed, "shard", "worker", "host", "pid", "up", "chunks", "state")...)
	for _, w := range workers {
		state := w.State
		if w.Reason != nil {
			state += ": " + *w.Reason
		}
		t.AppendRow(shardFirst(routed, terminalSafe(w.Shard), terminalSafe(w.WorkerID), terminalSafe(w.Host), w.PID, now.Sub(w.StartedAt).Round(time.Second).String(), w.Chunks, terminalSafe(state)))
	}
	t.Render()
}
