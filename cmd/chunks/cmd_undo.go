package main

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func undoCommand() *cli.Command {
	return &cli.Command{
		Name:      "undo",
		Usage:     "register the exact undo of a job: restore its orders (or a change's rows) that are still as it left them",
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
			"A JOB of a declared change (chunks register --change) is undone by the same rules: its undo\n" +
			"is a job of the same change that gives its committed rows still as JOB left them their values\n" +
			"from before JOB (from change_audit), with version + 1, audited; the lists are the rows' keys.\n" +
			"With --json it prints {\"job_id\", \"undoes\", \"created\", \"targets\", \"drifted\", \"missing\"}\n" +
			"(and \"change\" for a declared change's job, whose lists hold its keys, objects for a composite key).\n" +
			"With --tenant, through a chunks router: the undo of that tenant's job, registered on its shard\n" +
			"as a job of the same tenant (drain it with --tenant too).\n\n" +
			"Example:\n  chunks --schema lab pause festival-2026\n  chunks --schema lab undo festival-2026\n" +
			"  chunks --schema lab drain festival-2026-undo",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "job-id", Usage: "the undo's job id `NEW` (default: JOB-undo)"},
			tenantFlag(),
		},
		Action: action(parseUndo, runUndo),
	}
}

// undoOptions is chunks undo [--job-id NEW] JOB.
type undoOptions struct {
	Job   driver.JobRef
	NewID string // --job-id: the undo's id; "" lets the server name it JOB-undo
}

// parseUndo fills undoOptions from the command line.
func parseUndo(c *cli.Context) (*undoOptions, error) {
	job, err := parseJobRef(c)
	return &undoOptions{Job: job, NewID: c.String("job-id")}, err
}

// Validate checks the job and the undo's id, when given, as
// driver.RegisterUndo does (its error names new_job_id).
func (o *undoOptions) Validate() error {
	if err := o.Job.Validate(); err != nil {
		return err
	}
	if o.NewID == "" {
		return nil
	}
	var invalid *driver.Error
	if err := driver.CheckJobID(o.NewID); errors.As(err, &invalid) {
		return driver.Invalidf("new_job_id%s", strings.TrimPrefix(invalid.Msg, "job_id"))
	}
	return nil
}

// runUndo registers the undo of the job and says what it restores and what
// it leaves alone.
func runUndo(ctx context.Context, d deps, o *undoOptions, out io.Writer) error {
	var u driver.Undo
	var proposals []driver.Proposal
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		if u, err = o.Job.RegisterUndo(ctx, conn, o.NewID); err != nil || d.json || o.Job.Tenant != "" {
			return err
		}
		// Two people: the undo of a two-person job waits for its own approval.
		proposals, err = driver.Proposals(ctx, conn, u.JobID)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		return printJSON(out, u)
	}
	// An orders job's undo restores orders to pending; a declared change's
	// gives its rows (by key) the values they had before the job.
	noun, to := "order", "to pending"
	if u.Change != "" {
		noun, to = "row", "to the values from before "+u.Undoes
	}
	if u.Created {
		say(out, "registered job %s, the undo of %s: it restores %s %s, %s",
			u.JobID, u.Undoes, plural(len(u.Targets), noun), to, keyList(u.Targets))
	} else {
		say(out, "job %s was already registered as the undo of %s; nothing changed (it restores %s)",
			u.JobID, u.Undoes, plural(len(u.Targets), noun))
	}
	if len(u.Drifted)+len(u.Missing) > 0 {
		say(out, "left alone (changed since %s, or gone): drifted %s; missing %s", u.Undoes, keyList(u.Drifted), keyList(u.Missing))
	}
	for _, p := range proposals {
		if p.Action == "run" && p.ApprovedBy == nil {
			say(out, "it is proposed by %s: it runs once another role approves it: chunks approve --digest %s %s", terminalSafe(p.ProposedBy), p.Digest, p.JobID)
		}
	}
	return nil
}
