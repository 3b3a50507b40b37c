package main

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "show a registered job: its approval and its progress",
		UsageText: "chunks inspect [--tenant T] [--dsn DSN] [--schema S] [--json] JOB",
		Description: "An unknown job prints \"null\" with --json (and a line saying so without it), with exit 0:\n" +
			"not being registered is an answer, not an error. With --tenant, through a chunks router: the\n" +
			"job of that tenant, on its shard.\n\n" +
			"Example:\n  chunks --schema lab inspect festival-2026\n  chunks --schema lab --dsn \"$ROUTER\" inspect --tenant alien-desert festival-2026",
		Flags:  []cli.Flag{tenantFlag()},
		Action: action(parseJob, runInspect),
	}
}

// runInspect prints the job's approval and progress.
func runInspect(ctx context.Context, d deps, o *jobOptions, out io.Writer) error {
	var job *driver.Job
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		job, err = o.Job.Inspect(ctx, conn)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		return printJSON(out, job)
	}
	if job == nil {
		say(out, "no job %s is registered", o.Job.ID)
		return nil
	}
	printJob(out, job)
	return nil
}

// printJob prints a stored job and its targets (chunks inspect, and chunks
// approve for a reviewer).
func printJob(out io.Writer, job *driver.Job) {
	if job.Change != "" {
		printChangeJob(out, job)
		return
	}
	say(out, "job %s of tenant %s: %d of %d orders committed, %d per chunk",
		terminalSafe(job.JobID), terminalSafe(job.Tenant), job.NextIndex, len(job.Targets), job.ChunkSize)
	t := newTable(out, "#", "order", "revision", "qty", "chunk")
	for i, target := range job.Targets {
		status := "remaining"
		if i < job.NextIndex {
			status = "committed"
		}
		t.AppendRow([]any{i, target.ID, target.Revision, target.Qty, status})
	}
	t.Render()
}

// printChangeJob prints a job of a declared change: its targets as stored.
func printChangeJob(out io.Writer, job *driver.Job) {
	say(out, "job %s of tenant %s, change %s: %d of %d targets committed, %d per chunk",
		terminalSafe(job.JobID), terminalSafe(job.Tenant), terminalSafe(job.Change), job.NextIndex, len(job.ChangeTargets), job.ChunkSize)
	t := newTable(out, "#", "target", "chunk")
	for i, target := range job.ChangeTargets {
		status := "remaining"
		if i < job.NextIndex {
			status = "committed"
		}
		t.AppendRow([]any{i, terminalSafe(string(target)), status})
	}
	t.Render()
}
