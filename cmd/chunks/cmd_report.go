package main

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "show each committed order as matching, drifted or missing",
		UsageText: "chunks report [--tenant T] [--dsn DSN] [--schema S] [--json] JOB",
		Description: "matching: the order still has the job's tenant, the approved qty, state cancelled (pending,\n" +
			"for an undo made by chunks undo) and the approved revision + 1; drifted: it changed since;\n" +
			"missing: no order has that id any more. One SELECT reads the job's progress and the orders\n" +
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
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		if r, err = o.Job.Report(ctx, conn); err != nil || d.json {
			return err
		}
		lineage, err = o.Job.Lineage(ctx, conn)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		return printJSON(out, r)
	}
	printReport(out, o.Job.ID, r)
	printLineage(out, lineage)
	return nil
}

// printReport prints each committed order's status and the counts.
func printReport(out io.Writer, jobID string, r driver.JobReport) {
	status := map[int64]string{}
	for _, l := range []struct {
		ids  []int64
		name string
	}{{r.Matching, "matching"}, {r.Drifted, "drifted"}, {r.Missing, "missing"}} {
		for _, id := range l.ids {
			status[id] = l.name
		}
	}
	if len(r.Committed) > 0 {
		t := newTable(out, "order", "status")
		for _, id := range r.Committed {
			t.AppendRow([]any{id, status[id]})
		}
		t.Render()
	}
	say(out, "job %s: %d approved, %d committed, %d remaining: %d matching, %d drifted, %d missing",
		jobID, len(r.Approved), len(r.Committed), len(r.Remaining), len(r.Matching), len(r.Drifted), len(r.Missing))
}

// printLineage says how the job is tied to an undo, when it is.
func printLineage(out io.Writer, l *driver.JobLineage) {
	switch {
	case l == nil:
	case l.Undoes != nil:
		say(out, "job %s is the undo of %s: matching orders are pending again, as they were before %[2]s", l.JobID, *l.Undoes)
	case l.UndoneBy != nil:
		say(out, "job %s was undone by %s (chunks report %[2]s shows what it restored)", l.JobID, *l.UndoneBy)
	}
}
