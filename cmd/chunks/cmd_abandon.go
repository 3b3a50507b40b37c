package main

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
)

func abandonCommand() *cli.Command {
	return &cli.Command{
		Name:      "abandon",
		Usage:     "end an unfinished job for good: its committed chunks stay, its remaining targets never run",
		UsageText: "chunks abandon --reason TEXT [--tenant T] [--dsn DSN] [--schema S] [--json] JOB",
		Description: "The job leaves the queue and no chunk of it runs again: chunks resume, pause and run refuse it.\n" +
			"Its committed chunks stay, with their audit: chunks report answers for them and chunks undo\n" +
			"JOB undoes them. The decision is recorded with who (the session's user), when and --reason\n" +
			"(1 to 500 characters), and chunks status shows the job as abandoned with them. A job of a\n" +
			"campaign gives its place in the queue to the campaign's next job. A chunk of the job in\n" +
			"flight finishes first (abandon waits for it, up to 5 s). Abandoning an abandoned job changes\n" +
			"nothing and says how it ended. An unknown or finished job is a conflict (exit 3). With\n" +
			"--json it prints {\"job_id\", \"abandoned\", \"by\", \"at\", \"reason\", \"next_index\", \"targets\"}.\n" +
			"With --tenant, through a chunks router: on the tenant's shard. In a two-person job (chunks\n" +
			"policy set) the abandon is proposed instead, and done when another role approves it (chunks\n" +
			"approve; --json adds \"proposed\", \"action\", \"digest\", \"proposed_by\", \"proposed_at\").\n\n" +
			"Example:\n  chunks --schema lab abandon --reason 'superseded by festival-2027' festival-2026",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "reason", Usage: "why the job is abandoned, kept with the decision (`TEXT`, 1 to 500 characters)"},
			tenantFlag(),
		},
		Action: action(parseAbandon, runAbandon),
	}
}

// abandonOptions is chunks abandon --reason TEXT JOB.
type abandonOptions struct {
	Job    driver.JobRef
	Reason string
}

func parseAbandon(c *cli.Context) (*abandonOptions, error) {
	job, err := parseJobRef(c)
	return &abandonOptions{Job: job, Reason: c.String("reason")}, err
}

// Validate checks the job and the reason.
func (o *abandonOptions) Validate() error {
	if err := fleet.CheckAbandonReason(o.Reason); err != nil {
		return err
	}
	return o.Job.Validate()
}

// runAbandon ends the job for good.
func runAbandon(ctx context.Context, d deps, o *abandonOptions, out io.Writer) error {
	return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) (fleet.Abandoned, error) {
		return fleet.Abandon(ctx, conn, o.Job, o.Reason)
	}, func(a fleet.Abandoned) {
		if a.Proposal != nil {
			say(out, "job %s is two-person: proposed its abandon; it is done when another role approves it:", a.JobID)
			say(out, "  chunks approve --digest %s %s", a.Digest, a.JobID)
			return
		}
		if !a.Abandoned {
			say(out, "job %s was already abandoned by %s at %s (%s); nothing changed", a.JobID, terminalSafe(a.By),
				a.At.UTC().Format("2006-01-02 15:04:05 UTC"), terminalSafe(a.Reason))
			return
		}
		say(out, "abandoned job %s: %d of its %d targets were committed and stay (chunks report, chunks undo); the other %d will never run",
			a.JobID, a.NextIndex, a.Targets, a.Targets-a.NextIndex)
	})
}
