package main

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
)

func pauseCommand() *cli.Command {
	return &cli.Command{
		Name:      "pause",
		Usage:     "stop the workers from starting any chunk of a job until chunks resume (--after N: a canary)",
		UsageText: "chunks pause [--after N] [--tenant T] [--dsn DSN] [--schema S] [--json] JOB",
		Description: "A chunk of the job in flight finishes first: pause waits for it (up to 5 s). When pause\n" +
			"returns, no chunk of the job runs in the fleet, and none starts until chunks resume JOB\n" +
			"(chunks drain and run are not stopped). chunks status shows who paused it, when and why.\n" +
			"Pausing a paused job changes nothing. An unknown or finished job is a conflict (exit 3).\n" +
			"With --json it prints {\"job_id\", \"changed\"}. With --tenant, through a chunks router: on the\n" +
			"tenant's shard, whose workers it stops (with --after too: they count the chunks).\n\n" +
			"--after N is the canary: the workers run N more chunks of the job, and the pass that\n" +
			"commits the N-th pauses the job in that same transaction, so chunk N+1 never starts before\n" +
			"someone has looked (chunks report JOB) and run chunks resume JOB. A paused job is queued for\n" +
			"those N chunks. chunks status shows \"pauses after N more chunks\" meanwhile. N must be below\n" +
			"the chunks the job has left (else it would finish, not pause: a conflict, exit 3). Only the\n" +
			"workers' chunks count. With --json it prints {\"job_id\", \"changed\", \"after\"}.\n\n" +
			"Example:\n  chunks --schema lab pause festival-2026\n" +
			"  chunks --schema lab register plan.json && chunks --schema lab pause --after 1 festival-2026",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "after", Usage: "let the workers run `N` more chunks (1 to 10000), then pause the job itself"},
			tenantFlag(),
		},
		Action: action(parsePause, runPause),
	}
}

// pauseOptions is chunks pause [--after N] JOB.
type pauseOptions struct {
	Job   driver.JobRef
	After *int // --after N: the workers run N more chunks, then it pauses (the canary); nil pauses now
}

func parsePause(c *cli.Context) (*pauseOptions, error) {
	job, err := parseJobRef(c)
	o := &pauseOptions{Job: job}
	if c.IsSet("after") {
		n := c.Int("after")
		o.After = &n
	}
	return o, err
}

// Validate checks the job and N.
func (o *pauseOptions) Validate() error {
	if o.After != nil {
		if err := fleet.CheckPauseAfter(*o.After); err != nil {
			return err
		}
	}
	return o.Job.Validate()
}

// runPause pauses the job now, or after N more chunks.
func runPause(ctx context.Context, d deps, o *pauseOptions, out io.Writer) error {
	if o.After == nil {
		return pauseOrResume(ctx, d, o.Job, out, fleet.Pause,
			"paused job %s: no worker starts a chunk of it until chunks resume %[1]s",
			"job %s was already paused; nothing changed")
	}
	jobID, n := o.Job.ID, *o.After
	var changed bool
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		changed, err = fleet.PauseAfter(ctx, conn, o.Job, n)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		return printJSON(out, map[string]any{"job_id": jobID, "changed": changed, "after": n})
	}
	if !changed {
		say(out, "job %s already pauses after %s; nothing changed", jobID, plural(n, "more chunk"))
		return nil
	}
	say(out, "job %s: the workers run %s of it, then it pauses itself until chunks resume %s", jobID,
		plural(n, "more chunk"), jobID)
	return nil
}

func resumeCommand() *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "give a paused job back to the workers",
		UsageText: "chunks resume [--tenant T] [--dsn DSN] [--schema S] [--json] JOB",
		Description: "The job is queued again, runnable at once, its pause reason is cleared, and the workers are\n" +
			"notified. An unfinished job that is not queued at all (state idle) is queued too. Resuming a\n" +
			"queued job changes nothing. An unknown or finished job is a conflict (exit 3). With --json it prints\n" +
			"{\"job_id\", \"changed\"}. With --tenant, through a chunks router: on the tenant's shard.\n\n" +
			"Example:\n  chunks --schema lab resume festival-2026",
		Flags:  []cli.Flag{tenantFlag()},
		Action: action(parseJob, runResume),
	}
}

// runResume gives the job back to the workers.
func runResume(ctx context.Context, d deps, o *jobOptions, out io.Writer) error {
	return pauseOrResume(ctx, d, o.Job, out, fleet.Resume,
		"resumed job %s: it is queued again",
		"job %s was not paused; nothing changed")
}

// pauseOrResume runs op on the job.
func pauseOrResume(ctx context.Context, d deps, job driver.JobRef, out io.Writer,
	op func(context.Context, driver.DB, driver.JobRef) (bool, error), changedMsg, sameMsg string) error {
	var changed bool
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		changed, err = op(ctx, conn, job)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		return printJSON(out, map[string]any{"job_id": job.ID, "changed": changed})
	}
	if changed {
		say(out, changedMsg, job.ID)
	} else {
		say(out, sameMsg, job.ID)
	}
	return nil
}
