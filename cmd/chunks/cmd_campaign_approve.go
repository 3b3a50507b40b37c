package main

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func campaignApproveCommand() *cli.Command {
	return &cli.Command{
		Name:      "approve",
		Usage:     "approve every proposed job of a campaign at once, by the campaign's digest (two people)",
		UsageText: "chunks campaign approve [--digest SHA256 [--sign KEYFILE]] [--json] NAME",
		Description: "Under a two-person policy (chunks policy set) campaign create records every job of the\n" +
			"campaign as proposed. Without --digest it prints the campaign for review, changing nothing:\n" +
			"its targets and jobs, who proposed it when, and its digest (chunks campaign check NAME says what\n" +
			"it would do now). With --digest (the campaign's, as campaign plan and campaign create print\n" +
			"it), the session's user approves all of its proposed jobs in one transaction: the workers run\n" +
			"them from now on. The approver needs the approver access and must not be the proposer; another\n" +
			"digest is a conflict (exit 3). --sign KEYFILE signs the digest with an SSH key and keeps the\n" +
			"signature with each job's approval. --json prints {\"name\", \"digest\", \"approved\", \"jobs\",\n" +
			"\"approved_by\"} (without --digest, campaign status's object)." +
			campaignExample("chunks --schema lab campaign approve spring"),
		Flags:  approvalFlags("the campaign's `SHA256`, as campaign plan and campaign status print it"),
		Action: action(parseCampaignApprove, runCampaignApprove),
	}
}

// campaignApproveOptions is chunks campaign approve [--digest SHA256 [--sign KEYFILE]] NAME.
type campaignApproveOptions struct {
	Name string
	approval
}

func parseCampaignApprove(c *cli.Context) (*campaignApproveOptions, error) {
	name, err := nameArg(c)
	if err != nil {
		return nil, err
	}
	a, err := parseApproval(c)
	return &campaignApproveOptions{Name: name, approval: a}, err
}

// Validate checks the name, the digest and that --sign goes with it.
func (o *campaignApproveOptions) Validate() error {
	if err := driver.CheckCampaignName(o.Name); err != nil {
		return err
	}
	return o.validate()
}

func runCampaignApprove(ctx context.Context, d deps, o *campaignApproveOptions, out io.Writer) error {
	if o.Digest == "" {
		return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) (driver.CampaignProgress, error) {
			return driver.CampaignStatus(ctx, conn, o.Name)
		}, func(st driver.CampaignProgress) {
			say(out, "campaign %s: %s in %s, %d per chunk", st.Name, plural(st.Targets, "target"), plural(st.Jobs, "job"), st.ChunkSize)
			switch {
			case st.ProposedBy == nil:
				say(out, "it was not proposed: it needs no approval (chunks policy show)")
			case st.JobsProposed == 0 && st.ApprovedBy != nil:
				say(out, "proposed by %s, approved by %s at %s", terminalSafe(*st.ProposedBy), terminalSafe(*st.ApprovedBy),
					st.ApprovedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
			default:
				say(out, "proposed by %s at %s: %s await approval (chunks campaign check %s says what it would do now)",
					terminalSafe(*st.ProposedBy), st.ProposedAt.UTC().Format("2006-01-02 15:04:05 UTC"), plural(st.JobsProposed, "job"), st.Name)
				say(out, "  digest %s", st.Digest)
				say(out, "  to approve: chunks campaign approve --digest %s %s", st.Digest, st.Name)
			}
		})
	}
	sig, err := o.signature()
	if err != nil {
		return err
	}
	return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) (driver.CampaignApproved, error) {
		return driver.ApproveCampaign(ctx, conn, o.Name, o.Digest, sig)
	}, func(a driver.CampaignApproved) {
		if !a.Approved {
			say(out, "campaign %s: nothing awaited approval; nothing changed", a.Name)
			return
		}
		say(out, "campaign %s: approved %s as %s (digest %s); the workers run them from now on", a.Name, plural(a.Jobs, "job"),
			terminalSafe(a.ApprovedBy), a.Digest)
	})
}
