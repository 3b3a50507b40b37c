package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func campaignPlanCommand() *cli.Command {
	return &cli.Command{
		Name:      "plan",
		Usage:     "print a campaign for review: its digest, its jobs and what it would do now, writing nothing",
		UsageText: "chunks campaign plan [--markdown] (campaign create's flags) NAME (FILE | --from-query SQL)",
		Description: "Takes exactly campaign create's arguments and flags, and creates the campaign in a transaction\n" +
			"that it rolls back: it prints the digest that campaign create would record (and chunks campaign\n" +
			"approve --digest takes), its jobs and targets, campaign check's answer, and the SQL of the\n" +
			"change's generated function. --markdown prints it as Markdown for a pull request or a ticket.\n" +
			"--json prints {\"name\", \"digest\", \"jobs\", \"targets\", \"two_person\", \"check\", \"source\"}. It needs\n" +
			"an operator's access (the create it rolls back). Nothing is left written; exit 3 when a target\n" +
			"would not apply.\n\n" +
			"Example:\n  chunks --schema lab campaign plan --markdown --tenant alien-desert --chunk-size 10 --allow-partial spring targets.jsonl",
		Flags:  append(campaignCreateFlags(), &cli.BoolFlag{Name: "markdown", Usage: "print Markdown, for a pull request or a ticket"}),
		Action: action(parseCampaignPlan, runCampaignPlan),
	}
}

// campaignPlanOptions is chunks campaign plan: campaign create's options and --markdown.
type campaignPlanOptions struct {
	*campaignCreateOptions
	Markdown bool
}

func parseCampaignPlan(c *cli.Context) (*campaignPlanOptions, error) {
	o, err := parseCampaignCreate(c)
	return &campaignPlanOptions{campaignCreateOptions: o, Markdown: c.Bool("markdown")}, err
}

// campaignPlan is what chunks campaign plan prints.
type campaignPlan struct {
	Name      string               `json:"name"`
	Digest    string               `json:"digest"`
	Jobs      int                  `json:"jobs"`
	Targets   int                  `json:"targets"`
	TwoPerson bool                 `json:"two_person"`
	Check     driver.CampaignCheck `json:"check"`
	Source    *string              `json:"source"`
}

func runCampaignPlan(ctx context.Context, d deps, o *campaignPlanOptions, out io.Writer) error {
	var p campaignPlan
	err := withCampaignTargets(ctx, d, o.campaignCreateOptions, func(ctx context.Context, conn *pgx.Conn, ct driver.CampaignTargets) (err error) {
		p, err = planCampaign(ctx, conn, o.Spec, ct)
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case d.json:
		err = printJSON(out, p)
	case o.Markdown:
		printCampaignPlanMarkdown(out, p, o.Spec)
	default:
		printCampaignPlanText(out, p, o.Spec)
	}
	if err != nil || p.Check.Problems == 0 {
		return err
	}
	return driver.NewError(driver.ErrConflict, nil, "campaign plan %s: %d of %d targets would not apply now", p.Name, p.Check.Problems, p.Check.Remaining)
}

// planCampaign creates the campaign in a transaction it rolls back, and
// reads what it would be.
func planCampaign(ctx context.Context, conn *pgx.Conn, spec driver.CampaignSpec, ct driver.CampaignTargets) (p campaignPlan, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return p, err
	}
	defer func() {
		if rerr := tx.Rollback(ctx); rerr != nil && !errors.Is(rerr, pgx.ErrTxClosed) {
			err = errors.Join(err, fmt.Errorf("roll the plan back: %w", rerr))
		}
	}()
	created, err := driver.CreateCampaign(ctx, tx, spec, ct)
	if err != nil {
		return p, err
	}
	p = campaignPlan{Name: created.Name, Digest: created.Digest, Jobs: created.Jobs, Targets: created.Targets}
	if p.Check, err = driver.CheckCampaign(ctx, tx, spec.Name, 100); err != nil {
		return p, err
	}
	// Two people: whether the create just made proposed its jobs.
	st, err := driver.CampaignStatus(ctx, tx, spec.Name)
	if err != nil {
		return p, err
	}
	p.TwoPerson = st.ProposedBy != nil
	if spec.Change != "" {
		info, err := driver.ShowChange(ctx, tx, spec.Change)
		if err != nil {
			return p, err
		}
		if info != nil {
			p.Source = info.Source
		}
	}
	return p, nil
}

func campaignApprovalText(twoPerson bool) string {
	if twoPerson {
		return "two people: campaign create records its jobs as proposed; they run once another role approves this digest"
	}
	return "one person: its jobs run as created (chunks policy show)"
}

func printCampaignPlanText(out io.Writer, p campaignPlan, spec driver.CampaignSpec) {
	say(out, "plan of campaign %s: %s in %s, %d per chunk", p.Name, plural(p.Targets, "target"), plural(p.Jobs, "job"), spec.ChunkSize)
	if spec.Change != "" {
		say(out, "change %s", spec.Change)
	}
	say(out, "digest %s", p.Digest)
	say(out, "approval: %s", campaignApprovalText(p.TwoPerson))
	say(out, "now: %d of %d targets would apply, %d would not", p.Check.OK, p.Check.Remaining, p.Check.Problems)
	if len(p.Check.Listed) > 0 {
		t := newTable(out, "target", "would not apply")
		for _, l := range p.Check.Listed {
			t.AppendRow([]any{listedKey(l.ID, l.Key), terminalSafe(l.Problem)})
		}
		t.Render()
	}
	if p.Source != nil {
		say(out, "the change's generated function:")
		say(out, "%s", safeText(*p.Source))
	}
}

func printCampaignPlanMarkdown(out io.Writer, p campaignPlan, spec driver.CampaignSpec) {
	say(out, "## chunks campaign plan: %s\n", mdCell(p.Name))
	say(out, "| | |\n|---|---|")
	say(out, "| campaign | %s |", mdCell(p.Name))
	if spec.Change != "" {
		say(out, "| change | %s |", mdCell(spec.Change))
	} else {
		say(out, "| change | the cancellation of orders |")
	}
	say(out, "| targets | %d in %s, %d per chunk |", p.Targets, plural(p.Jobs, "job"), spec.ChunkSize)
	say(out, "| digest | **%s** |", p.Digest)
	say(out, "| approval | %s |", mdCell(campaignApprovalText(p.TwoPerson)))
	say(out, "| now | %d of %d targets would apply, %d would not |\n", p.Check.OK, p.Check.Remaining, p.Check.Problems)
	say(out, "To approve exactly this campaign once created: `chunks campaign approve --digest %s %s`", p.Digest, p.Name) // a name has no backtick
	if len(p.Check.Listed) > 0 {
		say(out, "\n### Targets that would not apply now\n")
		say(out, "| target | why |\n|---|---|")
		for _, l := range p.Check.Listed {
			say(out, "| %s | %s |", mdCell(fmt.Sprint(listedKey(l.ID, l.Key))), mdCell(l.Problem))
		}
	}
	if p.Source != nil {
		say(out, "\n### The change's generated function\n")
		mdCode(out, "sql", *p.Source)
	}
}

// listedKey is a listed target's id (orders) or key (a declared change).
func listedKey(id int64, key driver.Key) any {
	if id != 0 {
		return id
	}
	return terminalSafe(key.String())
}
