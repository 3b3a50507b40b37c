package main

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func policyCommand() *cli.Command {
	return &cli.Command{
		Name:  "policy",
		Usage: "whether a plan needs a second person's approval before it runs (two people)",
		Subcommands: []*cli.Command{
			{
				Name:      "set",
				Usage:     "set the approval policy of the schema, or of one declared change (the schema's owner only)",
				UsageText: "chunks policy set --two-person[=false] [--change NAME] [--dsn DSN] [--schema S] [--json]",
				Description: "--two-person: from now on, a job registered (register, campaign create, undo) is proposed by\n" +
					"its session's user and runs only once another role with the approver access approves its\n" +
					"digest (chunks approve); its skips and abandon are proposed too. --two-person=false: one person\n" +
					"again, for jobs registered from now on. With --change the setting is for that change's jobs and\n" +
					"wins over the schema's. A job keeps the rule it was registered under. Only the schema's owner\n" +
					"may set it (an operator who could turn it off would approve their own plans). It prints the\n" +
					"whole policy; --json prints [{\"change\", \"two_person\", \"set_by\", \"set_at\"}, ...].\n\n" +
					"Example:\n  chunks --schema lab policy set --two-person\n" +
					"  chunks --schema lab policy set --two-person=false --change hold_payment",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "two-person", Usage: "jobs need a second person's approval (--two-person=false: they do not)"},
					&cli.StringFlag{Name: "change", Usage: "set it for the declared change `NAME` only"},
				},
				Action: action(parsePolicySet, runPolicySet),
			},
			{
				Name:      "show",
				Usage:     "print the approval policy (read-only)",
				UsageText: "chunks policy show [--dsn DSN] [--schema S] [--json]",
				Description: "One line per setting: the whole schema's, then each change's. None: one person (every job\n" +
					"runs as registered). --json prints [{\"change\", \"two_person\", \"set_by\", \"set_at\"}, ...].\n\n" +
					"Example:\n  chunks --schema lab policy show",
				Action: action(parseNoArgs, runPolicyShow),
			},
		},
	}
}

// policySetOptions is chunks policy set --two-person[=false] [--change NAME].
type policySetOptions struct {
	TwoPerson bool
	Change    string
}

func parsePolicySet(c *cli.Context) (*policySetOptions, error) {
	if _, err := positional(c); err != nil {
		return nil, err
	}
	if !c.IsSet("two-person") {
		return nil, usagef("policy set needs --two-person or --two-person=false")
	}
	if c.IsSet("change") && c.String("change") == "" {
		return nil, driver.Invalidf(`change: must be the name of a declared change, got ""`)
	}
	return &policySetOptions{TwoPerson: c.Bool("two-person"), Change: c.String("change")}, nil
}

// Validate checks the change's name.
func (o *policySetOptions) Validate() error {
	if o.Change == "" {
		return nil
	}
	return driver.CheckChangeName(o.Change)
}

func runPolicySet(ctx context.Context, d deps, o *policySetOptions, out io.Writer) error {
	return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) ([]driver.Policy, error) {
		return driver.SetPolicy(ctx, conn, o.Change, o.TwoPerson)
	}, func(p []driver.Policy) { printPolicy(out, p) })
}

func runPolicyShow(ctx context.Context, d deps, _ *noArgs, out io.Writer) error {
	return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) ([]driver.Policy, error) {
		return driver.Policies(ctx, conn)
	}, func(p []driver.Policy) { printPolicy(out, p) })
}

// printPolicy prints the policy, one line a setting.
func printPolicy(out io.Writer, policy []driver.Policy) {
	if len(policy) == 0 {
		say(out, "no policy: one person (every job runs as registered)")
		return
	}
	for _, p := range policy {
		scope := "every job"
		if p.Change != nil {
			scope = "change " + *p.Change
		}
		rule := "one person"
		if p.TwoPerson {
			rule = "two people (proposed, then approved by another role)"
		}
		say(out, "%s: %s; set by %s at %s", scope, rule, terminalSafe(p.SetBy), p.SetAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
}
