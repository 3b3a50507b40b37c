package main

import (
	"context"
	"io"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func approveCommand() *cli.Command {
	return &cli.Command{
		Name:      "approve",
		Usage:     "approve what another role proposed in a job, by its digest (two people); without --digest, print it for review",
		UsageText: "chunks approve [--digest SHA256 [--sign KEYFILE]] [--dsn DSN] [--schema S] [--json] JOB",
		Description: "Under a two-person policy (chunks policy set) a job, and a skip or an abandon of it, is\n" +
			"proposed by one role and waits for another. Without --digest, approve prints what waits in JOB\n" +
			"for review, changing nothing: the job and its targets, who proposed it when, and the digest.\n" +
			"With --digest, the session's user approves what was proposed under exactly that digest: the job\n" +
			"runs from now on (the workers hear of it), a skip or an abandon is done now, recorded as its\n" +
			"proposer's. The approver needs the approver access (chunks grant --approver) and must not be\n" +
			"the proposer. A digest that is not what was proposed is a conflict (exit 3). --sign KEYFILE\n" +
			"signs the digest with an SSH private key (as ssh-keygen -Y sign -n chunks) and keeps the\n" +
			"signature with the approval, as evidence that chunks verify-approval checks. With --json it\n" +
			"prints {\"job\", \"proposals\"} without --digest, and the approved proposal with it.\n\n" +
			"Example:\n  chunks --schema lab approve festival-2026",
		Flags:  approvalFlags("the `SHA256` of what is approved, as chunks plan and chunks approve JOB print it"),
		Action: action(parseApprove, runApprove),
	}
}

// approval is --digest and --sign, of approve and campaign approve.
type approval struct {
	Digest string // "": print for review
	Sign   string // --sign: the key file
}

// approvalFlags are --digest (its usage says whose digest) and --sign.
func approvalFlags(digestUsage string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "digest", Usage: digestUsage},
		&cli.StringFlag{Name: "sign", Usage: "sign the digest with the SSH private key in `KEYFILE` (no passphrase)"},
	}
}

// parseApproval reads --digest and --sign; --digest given empty is invalid.
func parseApproval(c *cli.Context) (approval, error) {
	if c.IsSet("digest") && c.String("digest") == "" {
		return approval{}, driver.CheckDigest("digest", "")
	}
	return approval{Digest: c.String("digest"), Sign: c.String("sign")}, nil
}

// validate checks the digest, and that --sign goes with it.
func (a approval) validate() error {
	if a.Digest == "" {
		if a.Sign != "" {
			return usagef("--sign goes with --digest: it signs the digest approved")
		}
		return nil
	}
	return driver.CheckDigest("digest", a.Digest)
}

// signature is the armored signature of the digest with --sign's key, or "".
func (a approval) signature() (string, error) {
	if a.Sign == "" {
		return "", nil
	}
	key, err := os.ReadFile(a.Sign)
	if err != nil {
		return "", driver.Invalidf("sign: %v", err)
	}
	return driver.SignDigest(key, a.Digest)
}

// approveOptions is chunks approve [--digest SHA256 [--sign KEYFILE]] JOB.
type approveOptions struct {
	JobID string
	approval
}

func parseApprove(c *cli.Context) (*approveOptions, error) {
	args, err := positional(c, jobParam)
	if err != nil {
		return nil, err
	}
	a, err := parseApproval(c)
	return &approveOptions{JobID: args[0], approval: a}, err
}

// Validate checks the job id, the digest and that --sign goes with it.
func (o *approveOptions) Validate() error {
	if err := driver.CheckJobID(o.JobID); err != nil {
		return err
	}
	return o.validate()
}

// jobReview is what chunks approve JOB prints for review.
type jobReview struct {
	Job       *driver.Job       `json:"job"`
	Proposals []driver.Proposal `json:"proposals"`
}

func runApprove(ctx context.Context, d deps, o *approveOptions, out io.Writer) error {
	if o.Digest == "" {
		return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) (r jobReview, err error) {
			if r.Proposals, err = driver.Proposals(ctx, conn, o.JobID); err != nil {
				return r, err
			}
			r.Job, err = driver.InspectJob(ctx, conn, o.JobID)
			return r, err
		}, func(r jobReview) { printReview(out, r) })
	}
	sig, err := o.signature()
	if err != nil {
		return err
	}
	return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) (driver.Approved, error) {
		return driver.Approve(ctx, conn, o.JobID, o.Digest, sig)
	}, func(a driver.Approved) {
		signed := ""
		if a.Signature != nil {
			signed = ", signed"
		}
		if !a.Approved {
			say(out, "job %s: %s was already approved by %s at %s; nothing changed", a.JobID, proposalText(a.Proposal),
				terminalSafe(*a.ApprovedBy), a.ApprovedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
			return
		}
		say(out, "job %s: approved %s, proposed by %s (digest %s%s)", a.JobID, proposalText(a.Proposal), terminalSafe(a.ProposedBy), a.Digest, signed)
		if a.Action == "run" {
			say(out, "the workers run it from now on")
		}
	})
}

// proposalText is what a proposal does, in words.
func proposalText(p driver.Proposal) string {
	switch {
	case p.Action == "skip" && p.Detail.Key != nil:
		return "the skip of " + terminalSafe(p.Detail.Key.String()) + " (" + terminalSafe(p.Detail.Reason) + ")"
	case p.Action == "abandon":
		return "its abandon (" + terminalSafe(p.Detail.Reason) + ")"
	}
	return "the job"
}

// printReview prints a job and what of it waits for approval.
func printReview(out io.Writer, r jobReview) {
	waiting := 0
	for _, p := range r.Proposals {
		if p.ApprovedBy == nil {
			waiting++
		}
	}
	if len(r.Proposals) == 0 {
		say(out, "job %s was not proposed: it needs no approval (chunks policy show)", r.Job.JobID)
		return
	}
	if r.Job != nil {
		printJob(out, r.Job)
	}
	for _, p := range r.Proposals {
		if p.ApprovedBy != nil {
			say(out, "%s: proposed by %s, approved by %s at %s (digest %s)", proposalText(p), terminalSafe(p.ProposedBy),
				terminalSafe(*p.ApprovedBy), p.ApprovedAt.UTC().Format("2006-01-02 15:04:05 UTC"), p.Digest)
			continue
		}
		say(out, "%s: proposed by %s at %s, awaiting approval", proposalText(p), terminalSafe(p.ProposedBy),
			p.ProposedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
		say(out, "  digest %s", p.Digest)
		say(out, "  to approve: chunks approve --digest %s %s", p.Digest, p.JobID)
	}
	if waiting == 0 {
		say(out, "nothing of job %s awaits approval", r.Job.JobID)
	}
}
