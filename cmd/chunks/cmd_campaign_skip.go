package main

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
)

func campaignSkipCommand() *cli.Command {
	return &cli.Command{
		Name:      "skip",
		Usage:     "set aside every target of the campaign's paused jobs whose row does not match now, then resume those jobs",
		UsageText: "chunks campaign skip --mismatched --reason TEXT [--json] NAME",
		Description: "Each target of a paused job of NAME that campaign check would list now is skipped as chunks\n" +
			"skip skips one (who, when, --reason, what its row is now), and is printed with its row's\n" +
			"values; then those jobs are queued again (not while the campaign itself is paused: chunks\n" +
			"campaign resume). A paused job with no mismatched target stays paused. --mismatched says\n" +
			"which targets, and must be given. With --json it prints {\"name\", \"reason\", \"skipped\":\n" +
			"[{\"job_id\", \"key\", \"found\"}], \"resumed\": [job ids], \"campaign_paused\"}." +
			campaignExample("chunks --schema lab campaign status spring",
				"chunks --schema lab campaign skip --mismatched --reason 'edited by support, INC-88' spring"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "mismatched", Usage: "skip the targets whose row does not match now (required)"},
			&cli.StringFlag{Name: "reason", Usage: "why they are set aside, kept with each decision (`TEXT`, 1 to 500 characters)"},
		},
		Action: action(parseCampaignSkip, runCampaignSkip),
	}
}

// campaignSkipOptions is chunks campaign skip --mismatched --reason TEXT NAME.
type campaignSkipOptions struct {
	Name       string
	Reason     string
	Mismatched bool
}

func parseCampaignSkip(c *cli.Context) (*campaignSkipOptions, error) {
	name, err := nameArg(c)
	return &campaignSkipOptions{Name: name, Reason: c.String("reason"), Mismatched: c.Bool("mismatched")}, err
}

// Validate checks --mismatched, the reason and the name.
func (o *campaignSkipOptions) Validate() error {
	if !o.Mismatched {
		return usagef("campaign skip needs --mismatched: the targets whose row does not match now (chunks campaign check lists them)")
	}
	if err := fleet.CheckSkipReason(o.Reason); err != nil {
		return err
	}
	return driver.CheckCampaignName(o.Name)
}

// runCampaignSkip skips the mismatched targets and resumes their jobs.
func runCampaignSkip(ctx context.Context, d deps, o *campaignSkipOptions, out io.Writer) error {
	return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) (fleet.CampaignSkip, error) {
		return fleet.SkipMismatched(ctx, conn, o.Name, o.Reason)
	}, func(c fleet.CampaignSkip) {
		for _, s := range c.Skipped {
			say(out, "skipped job %s, %s: %s", s.JobID, terminalSafe(s.Key.String()), terminalSafe(s.Found))
		}
		switch {
		case len(c.Skipped) == 0:
			say(out, "campaign %s: no paused job has a target that does not match now; nothing changed", c.Name)
		case c.CampaignPaused:
			say(out, "campaign %s: skipped %s; the campaign is paused: chunks campaign resume %[1]s gives its jobs back to the workers",
				c.Name, plural(len(c.Skipped), "target"))
		default:
			say(out, "campaign %s: skipped %s; resumed %s", c.Name, plural(len(c.Skipped), "target"), plural(len(c.Resumed), "job"))
		}
	})
}
