package main

import (
	"context"

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
		Flags: []cli.Flag{tenantFlag()},
		Action: func(c *cli.Context) error {
			job, err := jobRef(c)
			if err != nil {
				return err
			}
			jobID := job.ID
			var r driver.JobReport
			var lineage *driver.JobLineage
			err = withConn(c, func(ctx context.Context, conn *pgx.Conn) (err error) {
				if r, err = job.Report(ctx, conn); err != nil || jsonOut(c) {
					return err
				}
				lineage, err = job.Lineage(ctx, conn)
				return err
			})
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(stdout, r)
			}
			printReport(jobID, r)
			printLineage(lineage)
			return nil
		},
	}
}

func printReport(jobID string, r driver.JobReport) {
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
		t := newTable(stdout, "order", "status")
		for _, id := range r.Committed {
			t.AppendRow([]any{id, status[id]})
		}
		t.Render()
	}
	say(stdout, "job %s: %d approved, %d committed, %d remaining: %d matching, %d drifted, %d missing",
		jobID, len(r.Approved), len(r.Committed), len(r.Remaining), len(r.Matching), len(r.Drifted), len(r.Missing))
}

// printLineage says how the job is tied to an undo, when it is.
func printLineage(l *driver.JobLineage) {
	switch {
	case l == nil:
	case l.Undoes != nil:
		say(stdout, "job %s is the undo of %s: matching orders are pending again, as they were before %[2]s", l.JobID, *l.Undoes)
	case l.UndoneBy != nil:
		say(stdout, "job %s was undone by %s (chunks report %[2]s shows what it restored)", l.JobID, *l.UndoneBy)
	}
}
