package main

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func verifyApprovalCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify-approval",
		Usage:     "check the SSH signatures of a job's approvals against an allowed signers file (read-only)",
		UsageText: "chunks verify-approval --allowed-signers FILE [--dsn DSN] [--schema S] [--json] JOB",
		Description: "FILE is git's allowed_signers format (\"principals [options] key\" a line, as ssh-keygen -Y verify\n" +
			"takes it). Each approval of JOB signed with chunks approve --sign must verify: a signature of\n" +
			"its digest, in namespace chunks, by a key that FILE lists for the role that approved it (a\n" +
			"principal pattern matching the role; a namespaces=\"...\" option, when given, naming chunks).\n" +
			"The database cannot verify a signature: the approver check of chunks approve is the\n" +
			"enforcement, and the signature is the evidence, checked here. Exit 0 when every approval is\n" +
			"signed and verifies; 3 (a conflict) when one is unsigned, does not verify, or nothing was\n" +
			"approved. --json prints [{\"action\", \"digest\", \"approved_by\", \"principal\", \"fingerprint\",\n" +
			"\"error\"}, ...].\n\n" +
			"Example:\n  chunks --schema lab verify-approval --allowed-signers allowed_signers q4",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "allowed-signers", Usage: "the allowed signers `FILE` (git's format; required)"},
		},
		Action: action(parseVerifyApproval, runVerifyApproval),
	}
}

// verifyApprovalOptions is chunks verify-approval --allowed-signers FILE JOB.
type verifyApprovalOptions struct {
	JobID          string
	AllowedSigners string
}

func parseVerifyApproval(c *cli.Context) (*verifyApprovalOptions, error) {
	args, err := positional(c, jobParam)
	if err != nil {
		return nil, err
	}
	if err := requireFlags(c, "allowed-signers"); err != nil {
		return nil, err
	}
	return &verifyApprovalOptions{JobID: args[0], AllowedSigners: c.String("allowed-signers")}, nil
}

// Validate checks the job id.
func (o *verifyApprovalOptions) Validate() error { return driver.CheckJobID(o.JobID) }

// approvalCheck is one approval's verdict.
type approvalCheck struct {
	Action      string `json:"action"`
	Digest      string `json:"digest"`
	ApprovedBy  string `json:"approved_by"`
	Principal   string `json:"principal"`
	Fingerprint string `json:"fingerprint"`
	Error       string `json:"error"` // "": it verifies
}

func runVerifyApproval(ctx context.Context, d deps, o *verifyApprovalOptions, out io.Writer) error {
	signers, err := os.ReadFile(o.AllowedSigners)
	if err != nil {
		return driver.Invalidf("allowed-signers: %v", err)
	}
	if err := driver.CheckAllowedSigners(signers); err != nil {
		return err
	}
	var proposals []driver.Proposal
	err = d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		proposals, err = driver.Proposals(ctx, conn, o.JobID)
		return err
	})
	if err != nil {
		return err
	}
	checks := []approvalCheck{}
	failed := 0
	for _, p := range proposals {
		if p.ApprovedBy == nil {
			continue
		}
		c := approvalCheck{Action: p.Action, Digest: p.Digest, ApprovedBy: *p.ApprovedBy}
		if p.Signature == nil {
			c.Error = "not signed"
		} else if v, err := driver.VerifySignature(signers, *p.ApprovedBy, p.Digest, *p.Signature); err != nil {
			if !errors.Is(err, driver.ErrConflict) {
				return err
			}
			c.Error = err.Error()
		} else {
			c.Principal, c.Fingerprint = v.Principal, v.Fingerprint
		}
		if c.Error != "" {
			failed++
		}
		checks = append(checks, c)
	}
	if d.json {
		if err := printJSON(out, checks); err != nil {
			return err
		}
	} else {
		for _, c := range checks {
			if c.Error != "" {
				say(out, "job %s: %s approved by %s (digest %s): %s", o.JobID, c.Action, terminalSafe(c.ApprovedBy), c.Digest, terminalSafe(c.Error))
				continue
			}
			say(out, "job %s: %s approved by %s (digest %s): signature verifies, key %s of %s", o.JobID, c.Action,
				terminalSafe(c.ApprovedBy), c.Digest, c.Fingerprint, terminalSafe(c.Principal))
		}
	}
	switch {
	case len(checks) == 0:
		return driver.NewError(driver.ErrConflict, nil, "verify-approval: job %s: nothing of it was approved", o.JobID)
	case failed > 0:
		return driver.NewError(driver.ErrConflict, nil, "verify-approval: job %s: %d of %d approvals do not verify", o.JobID, failed, len(checks))
	}
	return nil
}
