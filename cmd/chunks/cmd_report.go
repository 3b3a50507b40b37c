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
		Description: "matching: the order still has the job's tenant, the approved qty, state cancelled and the\n" +
			"approved revision + 1; drifted: it changed since; missing: no order has that id any more.\n" +
			"One SELECT reads the job's progress and the orders together; nothing is written. With --tenant,\n" +
			"through a chunks router: the job of that tenant, on its shard.\n\n" +
			"Example:\n  chunks --schema lab report festival-2026",
		Flags: []cli.Flag{tenantFlag()},
		Action: func(c *cli.Context) error {
			tenant, err := tenantArg(c)
			if err != nil {
				return err
			}
			jobID, err := jobArg(c)
			if err != nil {
				return err
			}
			var r driver.JobReport
			err = withConn(c, func(ctx context.Context, conn *pgx.Conn) (err error) {
				r, err = reportJob(ctx, conn, tenant, jobID)
				return err
			})
			if err != nil {
				return err
			}
			if jsonOut(c) {
				return printJSON(r)
			}
			printReport(jobID, r)
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
		t := newTable("order", "status")
		for _, id := range r.Committed {
			t.AppendRow([]any{id, status[id]})
		}
		t.Render()
	}
	say("job %s: %d approved, %d committed, %d remaining: %d matching, %d drifted, %d missing",
		jobID, len(r.Approved), len(r.Committed), len(r.Remaining), len(r.Matching), len(r.Drifted), len(r.Missing))
}
