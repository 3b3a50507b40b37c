package main

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "show each committed row as matching, drifted or missing",
		UsageText: "chunks report [--tenant T] [--dsn DSN] [--schema S] [--json] JOB",
		Description: "matching: the row is still as the job left it; drifted: it changed since; missing: no row\n" +
			"has its key any more. For an order: the job's tenant, the approved qty, state cancelled\n" +
			"(pending, for an undo made by chunks undo) and the approved revision + 1. For a job of a\n" +
			"declared change (chunks register --change), its rows are listed by key: every value the\n" +
			"change wrote, and the version it left. One SELECT reads the job's progress and the rows\n" +
			"together; nothing is written. The last line says which job undid this one, or which job\n" +
			"this undo undoes (--json prints the report's lists only; chunks status --json has both).\n" +
			"With --tenant, through a chunks router: the job of that tenant, on its shard.\n\n" +
			"Example:\n  chunks --schema lab report festival-2026",
		Flags:  []cli.Flag{tenantFlag()},
		Action: action(parseJob, runReport),
	}
}

// runReport prints the job's report and how it is tied to an undo (--json:
// the report only).
func runReport(ctx context.Context, d deps, o *jobOptions, out io.Writer) error {
	var r driver.JobReport
	var lineage *driver.JobLineage
	var proposals []driver.Proposal
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		if r, err = o.Job.Report(ctx, conn); err != nil || d.json {
			return err
		}
		if lineage, err = o.Job.Lineage(ctx, conn); err != nil || o.Job.Tenant != "" {
			return err
		}
		// Two people: who proposed it and who approved it (chunks approve JOB --json has them).
		proposals, err = driver.Proposals(ctx, conn, o.Job.ID)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		return printJSON(out, r.AllKeys())
	}
	noun := "order"
	if lineage != nil && lineage.Change != nil {
		noun = "key"
	}
	printReport(out, o.Job.ID, noun, r)
	printLineage(out, lineage)
	for _, p := range proposals {
		if p.ApprovedBy == nil {
			say(out, "%s: proposed by %s at %s, awaiting approval (digest %s)", proposalText(p), terminalSafe(p.ProposedBy),
				p.ProposedAt.UTC().Format("2006-01-02 15:04:05 UTC"), p.Digest)
			continue
		}
		say(out, "%s: proposed by %s, approved by %s at %s (digest %s)", proposalText(p), terminalSafe(p.ProposedBy),
			terminalSafe(*p.ApprovedBy), p.ApprovedAt.UTC().Format("2006-01-02 15:04:05 UTC"), p.Digest)
	}
	return nil
}

// printReport prints each committed order's (or key's, noun) status and
// the counts.
func printReport(out io.Writer, jobID, noun string, r driver.JobReport) {
	k := r.AllKeys()
	status := map[driver.Key]string{}
	for _, l := range []struct {
		keys []driver.Key
		name string
	}{{k.Matching, "matching"}, {k.Drifted, "drifted"}, {k.Missing, "missing"}} {
		for _, key := range l.keys {
			status[key] = l.name
		}
	}
	if len(k.Committed) > 0 {
		t := newTable(out, noun, "status")
		for _, key := range k.Committed {
			t.AppendRow([]any{keyCell(key), status[key]})
		}
		t.Render()
	}
	say(out, "job %s: %d approved, %d committed, %d remaining: %d matching, %d drifted, %d missing%s",
		jobID, len(k.Approved), len(k.Committed), len(k.Remaining), len(k.Matching), len(k.Drifted), len(k.Missing),
		skippedCount(len(k.Skipped)))
	printSkips(out, k.Skipped)
}

// skippedCount is ", N skipped" when an operator set targets aside.
func skippedCount(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d skipped", n)
}

// printSkips lists the targets operators set aside: the decision, and
// what the row was when it was made.
func printSkips(out io.Writer, skips []driver.Skip) {
	for _, s := range skips {
		found := "its row matched then"
		if s.Found != "" {
			found = terminalSafe(s.Found)
		}
		job := ""
		if s.JobID != "" {
			job = "job " + s.JobID + ", "
		}
		say(out, "skipped %s%s by %s at %s (%s): %s", job, terminalSafe(s.Key.String()), terminalSafe(s.By),
			s.At.UTC().Format("2006-01-02 15:04:05 UTC"), terminalSafe(s.Reason), found)
	}
}

// printLineage says how the job is tied to an undo, when it is.
func printLineage(out io.Writer, l *driver.JobLineage) {
	switch {
	case l == nil:
	case l.Undoes != nil && l.Change != nil:
		say(out, "job %s is the undo of %s: matching rows have their values from before %[2]s again", l.JobID, *l.Undoes)
	case l.Undoes != nil:
		say(out, "job %s is the undo of %s: matching orders are pending again, as they were before %[2]s", l.JobID, *l.Undoes)
	case l.UndoneBy != nil:
		say(out, "job %s was undone by %s (chunks report %[2]s shows what it restored)", l.JobID, *l.UndoneBy)
	}
}
