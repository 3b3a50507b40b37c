package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show every job: progress, queued / running / paused / done / idle, and drift",
		UsageText: "chunks status [--dsn DSN] [--schema S] [--json]",
		Description: "kind: cancel (a registered job) or \"undo of JOB\" (chunks undo). progress is next_index/n.\n" +
			"state: queued (runnable; \"rests until\" a --rate or retry delay ends), running (a chunk of it\n" +
			"is in flight, in the worker shown), paused (with who paused it, when and why; chunks resume\n" +
			"JOB), done, or idle (unfinished but not queued; chunks resume JOB queues it). detail also\n" +
			"says \"pauses after N more chunks\" while a canary (chunks pause --after N) is pending, and\n" +
			"\"undone by UNDO\" for an undone job. drift counts the committed orders that chunks report\n" +
			"calls drifted or missing.\n" +
			"One query; nothing is written or locked.\n\n" +
			"Example:\n  chunks --schema lab status\n  chunks --schema lab status --json | jq '.[] | select(.state == \"paused\")'",
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usagef("status takes no arguments, got %q", c.Args().Slice())
			}
			var list []fleet.JobStatus
			var now time.Time
			err := withConn(c, func(ctx context.Context, conn *pgx.Conn) (err error) {
				if list, err = fleet.Status(ctx, conn); err != nil {
					return err
				}
				return conn.QueryRow(ctx, "select now()").Scan(&now)
			})
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(list)
			}
			printStatus(list, now)
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
	t := newTable("job", "kind", "tenant", "progress", "state", "detail", "drift")
	for _, j := range list {
		count[j.State]++
		var details []string
		switch {
		case j.State == fleet.StateRunning && j.RunningIn != nil:
			details = append(details, "in "+*j.RunningIn)
		case j.State == fleet.StatePaused && j.PausedAt != nil:
			details = append(details, fmt.Sprintf("at %s by %s: %s", j.PausedAt.Local().Format("15:04:05"), deref(j.PausedBy), deref(j.PauseReason)))
		case j.VisibleAt != nil && j.VisibleAt.After(now):
			details = append(details, "rests until "+j.VisibleAt.Local().Format("15:04:05.000"))
		}
		if j.PauseAfter != nil {
			details = append(details, "pauses after "+plural(*j.PauseAfter, "more chunk"))
		}
		if j.UndoneBy != nil {
			details = append(details, "undone by "+*j.UndoneBy)
		}
		d := "?"
		if j.Drift != nil {
			d = fmt.Sprint(*j.Drift)
			drift += *j.Drift
		}
		t.AppendRow([]any{j.JobID, kindOf(j.Kind, j.Undoes), j.Tenant, fmt.Sprintf("%d/%d", j.NextIndex, j.N), j.State,
			strings.Join(details, "; "), d})
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

// kindOf is a job's kind as a person reads it: cancel, or "undo of JOB".
func kindOf(kind string, undoes *string) string {
	if kind == driver.KindRestore && undoes != nil {
		return "undo of " + *undoes
	}
	return kind
}

func deref(s *string) string {
	if s == nil {
		return "?"
	}
	return *s
}
