package main

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func registerCommand() *cli.Command {
	return &cli.Command{
		Name:      "register",
		Usage:     "register an approved plan; says whether it was new or already there",
		UsageText: "chunks register [--dsn DSN] [--schema S] PLAN.json",
		Description: "PLAN.json is {\"job_id\", \"tenant\", \"targets\": [{\"id\", \"revision\", \"qty\"}, ...], \"chunk_size\",\n" +
			"\"allow_partial\": true}, read strictly (no duplicate keys, integers only); - reads stdin.\n" +
			"Registering the same approval again changes nothing; a different one under the same id is a\n" +
			"conflict (exit 3).\n\n" +
			"Example:\n  chunks --schema lab register plan.json",
		Action: action(parsePlan, runRegister),
	}
}

// runRegister registers the plan, saying whether it was new.
func runRegister(ctx context.Context, d deps, o *planOptions, out io.Writer) error {
	plan := o.Plan
	var created bool
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		created, err = driver.Register(ctx, conn, plan)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		return printJSON(out, map[string]any{"job_id": plan.JobID, "created": created})
	}
	if created {
		say(out, "registered job %s: %s of %s, %d per chunk", plan.JobID, plural(len(plan.Targets), "order"), plan.Tenant, plan.ChunkSize)
	} else {
		say(out, "job %s was already registered with this approval; nothing changed", plan.JobID)
	}
	return nil
}
