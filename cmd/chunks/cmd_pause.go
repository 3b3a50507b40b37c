package main

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
)

func pauseCommand() *cli.Command {
	return &cli.Command{
		Name:      "pause",
		Usage:     "keep the workers away from a job until chunks resume",
		UsageText: "chunks pause [--dsn DSN] [--schema S] [--json] JOB",
		Description: "A paused job is never claimed again. A chunk of it in flight finishes first (pause waits\n" +
			"for it), and a worker that claimed it just before may still run that one chunk. Pausing a\n" +
			"paused job changes nothing. An unknown or finished job is a conflict (exit 3). With --json\n" +
			"it prints {\"job_id\", \"changed\"}.\n\n" +
			"Example:\n  chunks --schema lab pause festival-2026",
		Action: func(c *cli.Context) error {
			return pauseOrResume(c, fleet.Pause,
				"paused job %s: no worker claims it until chunks resume %[1]s",
				"job %s was already paused; nothing changed")
		},
	}
}

func resumeCommand() *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "give a paused job back to the workers",
		UsageText: "chunks resume [--dsn DSN] [--schema S] [--json] JOB",
		Description: "The job is queued again, claimable at once, and the workers are notified. An unfinished job\n" +
			"that is not queued at all (state idle) is queued too. Resuming a queued or leased job\n" +
			"changes nothing. An unknown or finished job is a conflict (exit 3). With --json it prints\n" +
			"{\"job_id\", \"changed\"}.\n\n" +
			"Example:\n  chunks --schema lab resume festival-2026",
		Action: func(c *cli.Context) error {
			return pauseOrResume(c, fleet.Resume,
				"resumed job %s: it is queued again",
				"job %s was not paused; nothing changed")
		},
	}
}

func pauseOrResume(c *cli.Context, op func(context.Context, driver.DB, string) (bool, error), changedMsg, sameMsg string) error {
	jobID, err := jobArg(c)
	if err != nil {
		return err
	}
	var changed bool
	err = withConn(c, func(ctx context.Context, conn *pgx.Conn) (err error) {
		changed, err = op(ctx, conn, jobID)
		return err
	})
	if err != nil {
		return err
	}
	if jsonOut(c) {
		return printJSON(map[string]any{"job_id": jobID, "changed": changed})
	}
	if changed {
		say(changedMsg, jobID)
	} else {
		say(sameMsg, jobID)
	}
	return nil
}
