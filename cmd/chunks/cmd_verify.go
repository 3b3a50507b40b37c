package main

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "prove a job's whole record (or every job of a campaign): approval, audit, chunks",
		UsageText: "chunks verify [--dsn DSN] [--schema S] [--json] JOB\n   chunks verify [--dsn DSN] [--schema S] [--json] --campaign NAME",
		Description: "A chunk of a declared change proves its job per chunk (its approval's kind, tenant and chunk\n" +
			"size, its progress, its own range); verify proves the rest, read-only: the stored targets are\n" +
			"still the approval (their sha256), the change is still the definition approved, the audit is\n" +
			"exactly targets[0:next_index] by ordinal and key, and the chunks run one after another up to\n" +
			"next_index (docs/contract.md). It works for orders jobs too. Exit 0 when sound, 3 when not\n" +
			"(the problem in report's words; with --campaign, each unsound job), 2 on bad input.\n\n" +
			"Example:\n  chunks --schema lab verify festival-2026\n  chunks --schema lab campaign create --tenant alien-desert --chunk-size 5 --allow-partial festival targets.jsonl\n  chunks --schema lab verify --campaign festival",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "campaign", Usage: "verify every job of campaign `NAME` instead of one job"},
		},
		Action: action(parseVerify, runVerify),
	}
}

// verifyOptions are chunks verify's: one job, or a campaign.
type verifyOptions struct {
	Job      string
	Campaign string
}

func parseVerify(c *cli.Context) (*verifyOptions, error) {
	if c.IsSet("campaign") {
		_, err := positional(c)
		return &verifyOptions{Campaign: c.String("campaign")}, err
	}
	job, err := oneArg(c, jobParam)
	return &verifyOptions{Job: job}, err
}

// Validate checks the job id or the campaign's name.
func (o *verifyOptions) Validate() error {
	if o.Job != "" {
		return driver.CheckJobID(o.Job)
	}
	return driver.CheckCampaignName(o.Campaign)
}

// runVerify prints what verify proved; an unsound record is a conflict
// (exit 3), after the output.
func runVerify(ctx context.Context, d deps, o *verifyOptions, out io.Writer) error {
	if o.Job != "" {
		var v driver.Verification
		err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
			v, err = driver.Verify(ctx, conn, o.Job)
			return err
		})
		if err != nil {
			return err
		}
		if d.json {
			err = printJSON(out, v)
		} else if v.Sound {
			say(out, "job %s: sound: %d of %d targets committed%s, each audited once, its approval unchanged",
				terminalSafe(v.JobID), v.NextIndex, v.Targets, chunksCommitted(v.Chunks))
		}
		if err != nil || v.Sound {
			return err
		}
		return driver.NewError(driver.ErrConflict, nil, "verify: %s", v.Problem)
	}
	var v driver.CampaignVerification
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		v, err = driver.VerifyCampaign(ctx, conn, o.Campaign)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		err = printJSON(out, v)
	} else {
		say(out, "campaign %s: %d jobs, %d of %d targets committed; %d unsound",
			terminalSafe(v.Name), v.Jobs, v.Committed, v.Targets, len(v.Unsound))
		for _, u := range v.Unsound {
			say(out, "  %s", terminalSafe(u.Problem))
		}
	}
	if err != nil || v.Sound {
		return err
	}
	return driver.NewError(driver.ErrConflict, nil, "verify: campaign %s: %d of %d jobs are not sound", v.Name, len(v.Unsound), v.Jobs)
}

// chunksCommitted says how many chunks a declared change's job committed
// (nil: an orders job, whose chunks are not recorded one by one).
func chunksCommitted(chunks *int) string {
	if chunks == nil {
		return ""
	}
	if *chunks == 1 {
		return " in 1 chunk"
	}
	return fmt.Sprintf(" in %d chunks", *chunks)
}
