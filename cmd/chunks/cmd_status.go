package main

import (
	"context"
	"fmt"
	"io"
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
		Usage:     "the fleet on one screen: jobs by state, unfinished campaigns, jobs that need a person, workers",
		UsageText: "chunks status [--all] [--dsn DSN] [--schema S] [--json]",
		Description: "By default a summary that fits one screen however many jobs there are: the jobs' counts by\n" +
			"state; the unfinished campaigns (the five newest), each with its state, done/total, rate over\n" +
			"about the last minute and ETA (chunks campaign status's); the paused jobs that wait for a\n" +
			"person (the five paused first, with why: a conflict's first problem); and the live workers.\n" +
			"It reads no row of any table (no drift). --all lists every job instead:\n\n" +
			"kind: cancel (a registered job), \"undo of JOB\" (chunks undo) or \"change NAME\" (a job of a\n" +
			"declared change, chunks register --change NAME; its undo is \"undo of JOB (change NAME)\").\n" +
			"progress is next_index/n.\n" +
			"state: queued (runnable; \"rests until\" a --rate or retry delay ends), running (a chunk of it\n" +
			"is in flight, in the worker shown), paused (with who paused it, when and why; chunks resume\n" +
			"JOB), done, idle (unfinished but not queued; chunks resume JOB queues it), or abandoned (with\n" +
			"who abandoned it, when and why; chunks abandon: it never runs again). detail also\n" +
			"says \"pauses after N more chunks\" while a canary (chunks pause --after N) is pending, and\n" +
			"\"undone by UNDO\" for an undone job. drift counts the committed rows (orders, or a declared\n" +
			"change's rows) that chunks report calls drifted or missing.\n" +
			"rate is the job's recent rate (the last one to two minutes of progress that fleet workers saw),\n" +
			"and eta when it is done at that rate: or \"throttled\" (every live worker holds new chunks),\n" +
			"\"stalled\" (queued, but no progress for over a minute) or \"no rate yet\", never a made-up time.\n" +
			"One query; nothing is written or locked.\n\n" +
			"Then the live workers (a heartbeat in the last 10 s): running, idle, or throttled and why.\n" +
			"Through a chunks router (its --dsn), every shard's jobs and workers, asked at once, with a shard\n" +
			"column; a shard that cannot be reached fails it, naming the shard.\n" +
			"--json prints every job, as --all does, with or without --all: {\"jobs\": [...], \"workers\": [...],\n" +
			"\"schema_version\": {...}}; a job's \"change\" is its declared change's name (null for other jobs).\n\n" +
			"When the database's chunks schema is older or newer than this binary's (chunks version), a\n" +
			"warning line says so first, naming both versions; schema_version has them (binary, database,\n" +
			"and compare: same, older, newer, or router: a router's shards each have their own).\n\n" +
			"Example:\n  chunks --schema lab status\n  chunks --schema lab status --all\n" +
			"  chunks --schema lab status --json | jq '.jobs[] | select(.state == \"paused\")'",
		Flags:  []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "list every job, with its drift, rate and ETA"}},
		Action: action(parseStatus, runStatus),
	}
}

// statusOptions is chunks status [--all].
type statusOptions struct {
	All bool
}

func parseStatus(c *cli.Context) (*statusOptions, error) {
	_, err := positional(c)
	return &statusOptions{All: c.Bool("all")}, err
}

// Validate has nothing to check.
func (*statusOptions) Validate() error { return nil }

// runStatus prints the summary, or with --all (or --json) every job, and
// the live workers (through a router, every shard's).
func runStatus(ctx context.Context, d deps, o *statusOptions, out io.Writer) error {
	var ov *fleet.Overview
	var schema fleet.SchemaVersions
	all := o.All || d.json
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		if all {
			ov, err = fleet.LoadOverview(ctx, conn, "", 0)
		} else {
			ov, err = fleet.Totals(ctx, conn)
		}
		if err != nil {
			return err
		}
		schema, err = fleet.LoadSchemaVersions(ctx, conn)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		return printJSON(out, map[string]any{"jobs": ov.Jobs, "workers": ov.Workers, "schema_version": schema})
	}
	if msg := schema.String(); msg != "" {
		say(out, "warning: %s", msg)
	}
	if !all {
		printSummary(out, ov)
		return nil
	}
	printStatus(out, ov.Jobs, ov.Now)
	printWorkers(out, ov.Workers, ov.Now)
	return nil
}

// summaryRows is how many campaigns, paused jobs and workers the summary
// lists, each followed by how many more there are: with the counts and the
// tables' borders, under 40 lines however many jobs there are.
const summaryRows = 5

// printSummary prints the fleet on one screen: the jobs' counts, the
// unfinished campaigns, the jobs that wait for a person, the workers.
func printSummary(out io.Writer, ov *fleet.Overview) {
	total := 0
	var parts []string
	for _, s := range fleet.States {
		if n := ov.Counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
			total += n
		}
	}
	if total == 0 {
		say(out, "no jobs")
	} else {
		say(out, "%s: %s; %s not yet committed", plural(total, "job"), strings.Join(parts, ", "), plural(int(ov.UnfinishedOrders), "target"))
	}
	if len(ov.Campaigns) > 0 {
		routed := ov.Campaigns[0].Shard != ""
		t := newTable(out, shardFirst(routed, "shard", "campaign", "state", "done/total", "rate", "eta")...)
		for _, c := range ov.Campaigns[:min(len(ov.Campaigns), summaryRows)] {
			rate := "unknown"
			if c.RatePerSecond != nil {
				rate = fmt.Sprintf("%.1f/s", *c.RatePerSecond)
			}
			t.AppendRow(shardFirst(routed, terminalSafe(c.Shard), terminalSafe(c.Name), fleet.CampaignState(c.CampaignProgress),
				fmt.Sprintf("%d/%d", c.Committed, c.Targets), rate, fleet.CampaignETA(c.CampaignProgress)))
		}
		t.Render()
	}
	more(out, ov.CampaignsUnfinished, min(len(ov.Campaigns), summaryRows), "unfinished campaign", "chunks campaign status NAME")
	if len(ov.Attention) > 0 {
		say(out, "waiting for a person:")
		routed := ov.Attention[0].Shard != ""
		t := newTable(out, shardFirst(routed, "shard", "job", "campaign", "paused", "by", "why")...)
		for _, j := range ov.Attention[:min(len(ov.Attention), summaryRows)] {
			campaign := "-"
			if j.Campaign != nil {
				campaign = *j.Campaign
			}
			t.AppendRow(shardFirst(routed, terminalSafe(j.Shard), terminalSafe(j.JobID), terminalSafe(campaign),
				ov.Now.Sub(j.PausedAt).Round(time.Second).String()+" ago", terminalSafe(j.PausedBy), terminalSafe(driver.Excerpt(j.PauseReason, false))))
		}
		t.Render()
	}
	more(out, ov.AttentionCount, min(len(ov.Attention), summaryRows), "paused job", "chunks status --all")
	if n := ov.Counts[fleet.StateProposed]; n > 0 {
		say(out, "%s proposed, awaiting another role's approval (chunks status --all lists them; chunks approve JOB)", plural(n, "job"))
	}
	workers := ov.Workers[:min(len(ov.Workers), summaryRows)]
	printWorkers(out, workers, ov.Now)
	more(out, len(ov.Workers), len(workers), "live worker", "chunks status --all")
}

// more says how many of n things were not listed (shown were), and where
// to see them.
func more(out io.Writer, n, shown int, noun, where string) {
	if n > shown {
		say(out, "(%s not listed: %s)", plural(n-shown, noun), where)
	}
}

// printStatus prints the jobs' table and the counts, as of now.
func printStatus(out io.Writer, list []fleet.JobStatus, now time.Time) {
	if len(list) == 0 {
		say(out, "no jobs")
		return
	}
	count := map[string]int{}
	drift := 0
	routed := list[0].Shard != "" // read through a chunks router
	t := newTable(out, shardFirst(routed, "shard", "job", "kind", "tenant", "progress", "state", "detail", "drift", "rate", "eta")...)
	for _, j := range list {
		count[j.State]++
		details := []string{}
		if detail := j.Detail(now); detail != "" {
			details = append(details, detail)
		}
		if j.PauseAfter != nil {
			details = append(details, "pauses after "+plural(*j.PauseAfter, "more chunk"))
		}
		if j.UndoneBy != nil {
			details = append(details, "undone by "+*j.UndoneBy)
		}
		if a := j.ApprovalText(); a != "" {
			details = append(details, a)
		}
		d := "?"
		if j.Drift != nil {
			d = fmt.Sprint(*j.Drift)
			drift += *j.Drift
		}
		rate := fleet.Rate(j.Rate)
		if rate == "" {
			rate = "-"
		}
		t.AppendRow(shardFirst(routed, terminalSafe(j.Shard), terminalSafe(j.JobID), terminalSafe(j.KindText()), terminalSafe(j.Tenant),
			fmt.Sprintf("%d/%d", j.NextIndex, j.N), j.State, terminalSafe(strings.Join(details, "; ")), d, rate, j.ETA.String()))
	}
	t.Render()
	var parts []string
	for _, s := range fleet.States {
		if count[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[s], s))
		}
	}
	say(out, "%s: %s; %s drifted or missing", plural(len(list), "job"), strings.Join(parts, ", "), plural(drift, "row"))
}

// shardFirst is a row of the status tables: with its first cell, the shard,
// only when the status was read through a router.
func shardFirst(routed bool, shard any, cells ...any) []any {
	if routed {
		return append([]any{shard}, cells...)
	}
	return cells
}

// printWorkers prints the live workers' table, as of now.
func printWorkers(out io.Writer, workers []fleet.WorkerStatus, now time.Time) {
	if len(workers) == 0 {
		say(out, "no live workers")
		return
	}
	routed := workers[0].Shard != ""
	t := newTable(out, shardFirst(routed, "shard", "worker", "host", "pid", "up", "chunks", "state")...)
	for _, w := range workers {
		state := w.State
		if w.Reason != nil {
			state += ": " + *w.Reason
		}
		t.AppendRow(shardFirst(routed, terminalSafe(w.Shard), terminalSafe(w.WorkerID), terminalSafe(w.Host), w.PID, now.Sub(w.StartedAt).Round(time.Second).String(), w.Chunks, terminalSafe(state)))
	}
	t.Render()
}
