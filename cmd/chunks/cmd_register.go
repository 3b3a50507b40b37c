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
		UsageText: "chunks register [--change NAME] [--dsn DSN] [--schema S] PLAN.json",
		Description: "PLAN.json is {\"job_id\", \"tenant\", \"targets\": [{\"id\", \"revision\", \"qty\"}, ...], \"chunk_size\",\n" +
			"\"allow_partial\": true}, read strictly (no duplicate keys, integers only); - reads stdin.\n" +
			"Registering the same approval again changes nothing; a different one under the same id is a\n" +
			"conflict (exit 3).\n" +
			"With --change NAME, PLAN.json is a job of the declared change NAME (chunks change define): the\n" +
			"same five keys, its targets objects of exactly the change's key, version, expect and\n" +
			"set_from_target fields ({\"payment_id\": 42, \"lock_version\": 3, \"amount_cents\": 1200,\n" +
			"\"reason\": \"chargeback\"}), checked by the server against the change and stored sorted by key.\n\n" +
			"Example:\n  chunks --schema lab register plan.json\n  chunks --schema lab register --change hold_payment holds-1.json",
		Flags:  []cli.Flag{changeFlag()},
		Action: action(parsePlan, runRegister),
	}
}

// runRegister registers the plan, saying whether it was new.
func runRegister(ctx context.Context, d deps, o *planOptions, out io.Writer) error {
	if o.Change != "" {
		return runRegisterChange(ctx, d, o, out)
	}
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

// runRegisterChange registers the job of a declared change, saying whether
// it was new.
func runRegisterChange(ctx context.Context, d deps, o *planOptions, out io.Writer) error {
	plan := o.ChangePlan
	var created bool
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		created, err = driver.RegisterChange(ctx, conn, o.Change, plan)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		return printJSON(out, map[string]any{"job_id": plan.JobID, "change": o.Change, "created": created})
	}
	if created {
		say(out, "registered job %s of change %s: %s of %s, %d per chunk", plan.JobID, o.Change, plural(len(plan.Targets), "target"), plan.Tenant, plan.ChunkSize)
	} else {
		say(out, "job %s was already registered with this approval; nothing changed", plan.JobID)
	}
	return nil
}
