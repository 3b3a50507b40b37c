package main

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func grantCommand() *cli.Command {
	return &cli.Command{
		Name:      "grant",
		Usage:     "give roles operator or viewer access to chunks (or take it back with --revoke)",
		UsageText: "chunks grant [--operator ROLE]... [--viewer ROLE]... [--revoke]",
		Description: "An operator runs every chunks operation (register, check, run, drain, pause, resume, undo,\n" +
			"campaigns, workers) and reads everything a viewer reads; a viewer reads (inspect, report, status,\n" +
			"the status page, metrics). Neither can write a table of chunks or needs any privilege on orders:\n" +
			"the functions are SECURITY DEFINER and act as the schema's owner. Run it as that owner (or a\n" +
			"superuser). --revoke takes the access back: revoking --operator leaves a viewer, revoking\n" +
			"--viewer takes everything. The roles must exist (CREATE ROLE). The schema's owner is refused:\n" +
			"every function runs with its privileges (chunks migrate restores any it lost).\n\n" +
			"With --json it prints one {\"role\", \"access\", \"revoked\", \"functions\", \"tables\"} per role.\n\n" +
			"Example:\n  chunks grant --schema lab --operator alice --operator fleet --viewer grafana",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "operator", Usage: "a role to make an operator (repeatable)"},
			&cli.StringSliceFlag{Name: "viewer", Usage: "a role to make a viewer (repeatable)"},
			&cli.BoolFlag{Name: "revoke", Usage: "take the access back instead"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usagef("grant takes no arguments, got %s: name roles with --operator or --viewer", argList(c.Args().Slice()))
			}
			type grant struct {
				role   string
				access driver.Access
			}
			var grants []grant
			for _, r := range c.StringSlice("operator") {
				grants = append(grants, grant{r, driver.Operator})
			}
			for _, r := range c.StringSlice("viewer") {
				grants = append(grants, grant{r, driver.Viewer})
			}
			if len(grants) == 0 {
				return usagef("grant needs at least one --operator ROLE or --viewer ROLE")
			}
			if global(c, "schema") == "" {
				return usagef("grant needs --schema (or $CHUNKS_SCHEMA)")
			}
			change := driver.Grant
			if c.Bool("revoke") {
				change = driver.Revoke
			}
			var done []driver.Granted
			// One transaction: every grant, or none.
			err := withConn(c, func(ctx context.Context, conn *pgx.Conn) error {
				return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
					for _, g := range grants {
						out, err := change(ctx, tx, g.role, g.access)
						if err != nil {
							return err
						}
						done = append(done, out)
					}
					return nil
				})
			})
			if err != nil {
				return err
			}
			for _, g := range done {
				if jsonOut(c) {
					if err := printJSON(stdout, g); err != nil {
						return err
					}
					continue
				}
				if c.Bool("revoke") {
					say(stdout, "revoked %s from %s: EXECUTE on %s, SELECT on %s", g.Access, terminalSafe(g.Role),
						plural(len(g.Functions), "function"), plural(len(g.Tables), "table"))
				} else {
					say(stdout, "granted %s to %s: EXECUTE on %s, SELECT on %s", g.Access, terminalSafe(g.Role),
						plural(len(g.Functions), "function"), plural(len(g.Tables), "table"))
				}
			}
			return nil
		},
	}
}
