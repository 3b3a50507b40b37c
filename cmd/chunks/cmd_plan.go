package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func planCommand() *cli.Command {
	return &cli.Command{
		Name:      "plan",
		Usage:     "print a plan for review: normalized, its digest, and what it would do now (read-only)",
		UsageText: "chunks plan [--change NAME] [--markdown] [--dsn DSN] [--schema S] [--json] PLAN.json",
		Description: "Reads PLAN.json as register does (- reads stdin) and prints, in one read-only transaction:\n" +
			"the plan as register would record it (targets typed and sorted), its digest (the sha256 that\n" +
			"chunks approve --digest takes and register --digest pins), what it would do now (check's answer\n" +
			"for each target, and counts), and the SQL of the change's generated function. --markdown prints\n" +
			"the same as Markdown, to paste into a pull request or a ticket. --json prints {\"plan\",\n" +
			"\"change\", \"change_digest\", \"digest\", \"two_person\", \"check\", \"source\"}: \"digest\" is the 64 hex\n" +
			"characters. Nothing is locked or written. Exit 0 when every target would apply and register\n" +
			"would not conflict, 3 when not (after the output), 2 for an invalid plan.\n\n" +
			"Example:\n  chunks --schema lab plan --change hold_payment --markdown holds-1.json > holds-1.md\n" +
			"  chunks --schema lab register --change hold_payment --digest \"$(chunks --schema lab --json plan --change hold_payment holds-1.json | jq -r .digest)\" holds-1.json",
		Flags: []cli.Flag{
			changeFlag(),
			&cli.BoolFlag{Name: "markdown", Usage: "print Markdown, for a pull request or a ticket"},
		},
		Action: action(parsePlanReview, runPlan),
	}
}

// planReviewOptions is chunks plan [--change NAME] [--markdown] PLAN.json.
type planReviewOptions struct {
	*planOptions
	Markdown bool
}

func parsePlanReview(c *cli.Context) (*planReviewOptions, error) {
	o, err := parsePlan(c)
	return &planReviewOptions{planOptions: o, Markdown: c.Bool("markdown")}, err
}

// targetVerdict is one target of a plan's check, whichever its kind.
type targetVerdict struct {
	Key       string
	OK        bool
	Problem   string
	Committed bool
}

// planReview is what chunks plan prints.
type planReview struct {
	driver.PlanDigest
	Check  json.RawMessage `json:"check"`  // check's answer (driver.PlanCheck or driver.ChangeCheck)
	Source *string         `json:"source"` // the change's generated function; nil for orders
	// What check said, for the text and the Markdown.
	jobID         string
	verdicts      []targetVerdict
	job, problem  string
	ok            bool
	noun, changed string
}

// reviewPlan reads everything chunks plan prints in one read-only,
// repeatable read transaction: the digest, check's answer and the SQL all
// see the same snapshot.
func reviewPlan(ctx context.Context, conn *pgx.Conn, o *planOptions) (r planReview, err error) {
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var check any
		r.jobID = o.Plan.JobID
		if o.Change != "" {
			r.jobID = o.ChangePlan.JobID
		}
		if o.Change == "" {
			if r.PlanDigest, err = driver.DigestPlan(ctx, tx, o.Plan); err != nil {
				return err
			}
			c, err := driver.CheckPlan(ctx, tx, o.Plan)
			if err != nil {
				return err
			}
			check, r.job, r.problem, r.ok, r.noun, r.changed = c, c.Job, c.JobProblem, c.OK, "order", "cancelled"
			for _, t := range c.Targets {
				r.verdicts = append(r.verdicts, targetVerdict{fmt.Sprint(t.ID), t.OK, t.Problem, t.Committed})
			}
		} else {
			if r.PlanDigest, err = driver.DigestChangePlan(ctx, tx, o.Change, o.ChangePlan); err != nil {
				return err
			}
			c, err := driver.CheckChange(ctx, tx, o.Change, o.ChangePlan)
			if err != nil {
				return err
			}
			check, r.job, r.problem, r.ok, r.noun, r.changed = c, c.Job, c.JobProblem, c.OK, "key", "changed"
			for _, t := range c.Targets {
				r.verdicts = append(r.verdicts, targetVerdict{t.Key.String(), t.OK, t.Problem, t.Committed})
			}
			info, err := driver.ShowChange(ctx, tx, o.Change)
			if err != nil {
				return err
			}
			if info != nil {
				r.Source = info.Source
			}
		}
		r.Check, err = json.Marshal(check)
		return err
	})
	return r, err
}

func runPlan(ctx context.Context, d deps, o *planReviewOptions, out io.Writer) error {
	var r planReview
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		r, err = reviewPlan(ctx, conn, o.planOptions)
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case d.json:
		err = printJSON(out, r)
	case o.Markdown:
		printPlanMarkdown(out, r)
	default:
		printPlanText(out, r)
	}
	if err != nil || r.ok {
		return err
	}
	return driver.NewError(driver.ErrConflict, nil, "plan: job %s: %s", r.jobID, r.summary())
}

// counts are the targets that would be changed now, would not, and were
// already committed by the job.
func (r planReview) counts() (apply, not, committed int) {
	for _, v := range r.verdicts {
		switch {
		case v.Committed:
			committed++
		case v.OK:
			apply++
		default:
			not++
		}
	}
	return apply, not, committed
}

// summary is the counts in one line.
func (r planReview) summary() string {
	apply, not, committed := r.counts()
	s := fmt.Sprintf("%d of %d targets would be %s now, %d would not", apply, len(r.verdicts), r.changed, not)
	if committed > 0 {
		s += fmt.Sprintf(", %d already are (committed by this job)", committed)
	}
	return s
}

// now is what target v would do now, in words.
func (r planReview) now(v targetVerdict) string {
	switch {
	case v.Committed:
		return "committed by this job"
	case !v.OK:
		return v.Problem
	}
	return "would be " + r.changed
}

// approvalText says who must approve it.
func (r planReview) approvalText() string {
	if r.TwoPerson {
		return "two people: register records it as proposed; it runs once another role approves this digest"
	}
	return "one person: it runs as registered (chunks policy show)"
}

func printPlanText(out io.Writer, r planReview) {
	job := r.jobID
	say(out, "plan of job %s", terminalSafe(job))
	if r.Change != nil {
		say(out, "change %s (definition digest %s)", *r.Change, *r.ChangeDigest)
	}
	say(out, "digest %s", r.Digest)
	say(out, "approval: %s", r.approvalText())
	say(out, "job %s: %s", terminalSafe(job), terminalSafe(jobVerdict(r.job, r.problem)))
	t := newTable(out, "#", r.noun, "now")
	for i, v := range r.verdicts {
		t.AppendRow([]any{i, terminalSafe(v.Key), terminalSafe(r.now(v))})
	}
	t.Render()
	say(out, "%s", r.summary())
	say(out, "the plan, as register records it:")
	say(out, "%s", safeText(indentJSON(r.Plan)))
	if r.Source != nil {
		say(out, "the change's generated function:")
		say(out, "%s", safeText(*r.Source))
	}
}

func printPlanMarkdown(out io.Writer, r planReview) {
	job := r.jobID
	say(out, "## chunks plan: job %s\n", mdCell(job))
	say(out, "| | |\n|---|---|")
	say(out, "| job | %s |", mdCell(job))
	if r.Change != nil {
		say(out, "| change | %s (definition digest %s) |", mdCell(*r.Change), mdCell(*r.ChangeDigest))
	} else {
		say(out, "| change | the cancellation of orders |")
	}
	say(out, "| digest | **%s** |", r.Digest)
	say(out, "| approval | %s |", mdCell(r.approvalText()))
	say(out, "| register | %s |", mdCell(jobVerdict(r.job, r.problem)))
	say(out, "| now | %s |\n", mdCell(r.summary()))
	say(out, "To approve exactly this plan once registered: `chunks approve --digest %s %s`\n", r.Digest, job) // a job id has no backtick
	say(out, "### What it would do now\n")
	say(out, "| # | %s | now |\n|---:|---|---|", r.noun)
	for i, v := range r.verdicts {
		say(out, "| %d | %s | %s |", i, mdCell(v.Key), mdCell(r.now(v)))
	}
	say(out, "\n### The plan, as register records it\n")
	mdCode(out, "json", indentJSON(r.Plan))
	if r.Source != nil {
		say(out, "\n### The change's generated function\n")
		mdCode(out, "sql", *r.Source)
	}
}

// indentJSON is data indented for reading, every value's text as the
// server wrote it (data as it is when it is not JSON).
func indentJSON(data []byte) string {
	var b bytes.Buffer
	if err := json.Indent(&b, data, "", "  "); err != nil {
		return string(data)
	}
	return b.String()
}
