package main

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func grantCommand() *cli.Command {
	return &cli.Command{
		Name:      "grant",
		Usage:     "give roles operator, viewer or approver access to chunks (or take it back with --revoke)",
		UsageText: "chunks grant [--operator ROLE]... [--viewer ROLE]... [--approver ROLE]... [--revoke]",
		Description: "An operator runs every chunks operation (register, check, run, drain, pause, resume, undo,\n" +
			"campaigns, workers) and reads everything a viewer reads; a viewer reads (inspect, report, status,\n" +
			"the status page, metrics); an approver reads as a viewer, checks plans, and approves what another\n" +
			"role proposed (chunks approve, under a two-person policy: chunks policy set). None can write a\n" +
			"table of chunks or needs any privilege on orders:\n" +
			"the functions are SECURITY DEFINER and act as the schema's owner. Run it as that owner (or a\n" +
			"superuser). --revoke takes the access back: revoking --operator or --approver leaves a viewer, revoking\n" +
			"--viewer takes everything. The roles must exist (CREATE ROLE). The schema's owner is refused:\n" +
			"every function runs with its privileges (chunks migrate restores any it lost).\n\n" +
			"With --json it prints one {\"role\", \"access\", \"revoked\", \"functions\", \"tables\"} per role.\n\n" +
			"Example:\n  chunks grant --schema lab --operator alice --operator fleet --viewer grafana\n" +
			"  chunks grant --schema lab --approver bob",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "operator", Usage: "a role to make an operator (repeatable)"},
			&cli.StringSliceFlag{Name: "viewer", Usage: "a role to make a viewer (repeatable)"},
			&cli.StringSliceFlag{Name: "approver", Usage: "a role to make an approver (repeatable)"},
			&cli.BoolFlag{Name: "revoke", Usage: "take the access back instead"},
		},
		Action: action(parseGrant, runGrant),
	}
}

// grantOptions is chunks grant [--operator ROLE]... [--viewer ROLE]...
// [--revoke]. The schema is the global --schema (or $CHUNKS_SCHEMA), which
// grant needs.
type grantOptions struct {
	Schema    string
	Operators []string // --operator: the roles to make (or, with Revoke, unmake) operators
	Viewers   []string // --viewer: the roles to make (or unmake) viewers
	Approvers []string // --approver: the roles to make (or unmake) approvers
	Revoke    bool     // --revoke: take the access back
}

// parseGrant fills grantOptions from the command line (no arguments).
func parseGrant(c *cli.Context) (*grantOptions, error) {
	if c.Args().Len() > 0 {
		return nil, usagef("grant takes no arguments, got %s: name roles with --operator, --viewer or --approver", argList(c.Args().Slice()))
	}
	return &grantOptions{Schema: global(c, "schema"), Operators: c.StringSlice("operator"),
		Viewers: c.StringSlice("viewer"), Approvers: c.StringSlice("approver"), Revoke: c.Bool("revoke")}, nil
}

// Validate checks that there is a role to grant to and a schema.
func (o *grantOptions) Validate() error {
	if len(o.Operators)+len(o.Viewers)+len(o.Approvers) == 0 {
		return usagef("grant needs at least one --operator ROLE, --viewer ROLE or --approver ROLE")
	}
	if o.Schema == "" {
		return usagef("grant needs --schema (or $CHUNKS_SCHEMA)")
	}
	return nil
}

// runGrant grants (or revokes) every role's access in one transaction:
// every grant, or none.
func runGrant(ctx context.Context, d deps, o *grantOptions, out io.Writer) error {
	type grant struct {
		role   string
		access driver.Access
	}
	var grants []grant
	for _, r := range o.Operators {
		grants = append(grants, grant{r, driver.Operator})
	}
	for _, r := range o.Viewers {
		grants = append(grants, grant{r, driver.Viewer})
	}
	for _, r := range o.Approvers {
		grants = append(grants, grant{r, driver.Approver})
	}
	change, verb := driver.Grant, "granted %s to %s: EXECUTE on %s, SELECT on %s"
	if o.Revoke {
		change, verb = driver.Revoke, "revoked %s from %s: EXECUTE on %s, SELECT on %s"
	}
	d.schema = o.Schema
	var done []driver.Granted
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, g := range grants {
				granted, err := change(ctx, tx, g.role, g.access)
				if err != nil {
					return err
				}
				done = append(done, granted)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, g := range done {
		if d.json {
			if err := printJSON(out, g); err != nil {
				return err
			}
			continue
		}
		say(out, verb, g.Access, terminalSafe(g.Role), plural(len(g.Functions), "function"), plural(len(g.Tables), "table"))
	}
	return nil
}
