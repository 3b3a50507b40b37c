package main

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func undoCommand() *cli.Command {
	return &cli.Command{
		Name:      "undo",
		Usage:     "register the exact undo of a job: restore its orders that are still as it left them",
		UsageText: "chunks undo [--job-id NEW] [--tenant T] [--dsn DSN] [--schema S] [--json] JOB",
		Description: "Builds the compensating job of JOB and registers it as one approval, in one transaction.\n" +
			"Its targets are JOB's committed orders that are still exactly as JOB left them (chunks report\n" +
			"calls them matching); each of its chunks restores them to pending with revision + 1, audited\n" +
			"in job_audit. Drifted and missing orders are listed and left alone: they changed since, and\n" +
			"deciding about them is a new business decision. The undo is a job like any other: queued for\n" +
			"the workers, or run with chunks drain NEW; chunks report NEW shows it (matching: pending).\n" +
			"NEW defaults to JOB-undo (--job-id is required when that passes 64 characters). Running the\n" +
			"same undo again changes nothing. A conflict (exit 3): an unknown JOB, an undo (an undo is not\n" +
			"undone), a JOB already undone under another id, NEW taken by another job, a JOB that can still\n" +
			"make progress (unfinished and not paused: chunks pause JOB first), nothing left to undo.\n" +
			"With --json it prints {\"job_id\", \"undoes\", \"created\", \"targets\", \"drifted\", \"missing\"}.\n" +
			"With --tenant, through a chunks router: the undo of that tenant's job, registered on its shard\n" +
			"as a job of the same tenant (drain it with --tenant too).\n\n" +
			"Example:\n  chunks --schema lab pause festival-2026\n  chunks --schema lab undo festival-2026\n" +
			"  chunks --schema lab drain festival-2026-undo",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "job-id", Usage: "the undo's job id `NEW` (default: JOB-undo)"},
			tenantFlag(),
		},
		Action: func(c *cli.Context) error {
			job, err := jobRef(c)
			if err != nil {
				return err
			}
			var u driver.Undo
			err = withConn(c, func(ctx context.Context, conn *pgx.Conn) (err error) {
				u, err = job.RegisterUndo(ctx, conn, c.String("job-id"))
				return err
			})
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(stdout, u)
			}
			if u.Created {
				say(stdout, "registered job %s, the undo of %s: it restores %s to pending, %s",
					u.JobID, u.Undoes, plural(len(u.Targets), "order"), ids(u.Targets))
			} else {
				say(stdout, "job %s was already registered as the undo of %s; nothing changed (it restores %s)",
					u.JobID, u.Undoes, plural(len(u.Targets), "order"))
			}
			if len(u.Drifted)+len(u.Missing) > 0 {
				say(stdout, "left alone (changed since %s, or gone): drifted %s; missing %s", u.Undoes, ids(u.Drifted), ids(u.Missing))
			}
			return nil
		},
	}
}
