package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
)

func skipCommand() *cli.Command {
	return &cli.Command{
		Name:      "skip",
		Usage:     "set one approved target of a job aside: the job never changes it, and goes on past it",
		UsageText: "chunks skip --reason TEXT [--tenant T] [--dsn DSN] [--schema S] [--json] JOB KEY",
		Description: "KEY is the target's key: its value (42, ab-7), or a JSON object of a composite key's\n" +
			"columns ('{\"shop_id\": 7, \"sku\": \"x\"}'). The decision is recorded with who (the session's\n" +
			"user), when, --reason (1 to 500 characters) and what the change's check says of the row\n" +
			"now. The chunk that holds the target and every later one pass over it; chunks report lists\n" +
			"it as skipped, and chunks undo leaves it alone. The approval is not changed. Only a target\n" +
			"not yet committed can be skipped (a committed one is undone), and only in a job of a\n" +
			"declared change. A paused job stays paused: chunks resume JOB gives it back to the fleet.\n" +
			"Skipping a skipped target changes nothing. With --json it prints {\"job_id\", \"key\",\n" +
			"\"skipped\", \"by\", \"at\", \"reason\", \"found\", \"paused\"}. With --tenant, through a chunks\n" +
			"router: on the tenant's shard. In a two-person job (chunks policy set) the skip is proposed\n" +
			"instead, and done when another role approves it (chunks approve; --json adds \"proposed\",\n" +
			"\"action\", \"digest\", \"proposed_by\", \"proposed_at\").\n\n" +
			"Example:\n  chunks --schema lab register --change hold_payment holds-1.json\n" +
			"  chunks --schema lab skip --reason 'edited by support, ticket 4411' holds-1 2\n" +
			"  chunks --schema lab report holds-1",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "reason", Usage: "why the target is set aside, kept with the decision (`TEXT`, 1 to 500 characters)"},
			tenantFlag(),
		},
		Action: action(parseSkip, runSkip),
	}
}

// skipOptions is chunks skip --reason TEXT JOB KEY.
type skipOptions struct {
	Job    driver.JobRef
	Key    string // as typed
	Reason string
}

func parseSkip(c *cli.Context) (*skipOptions, error) {
	job, args, err := parseJobArgs(c, param{name: "KEY", what: "the target's key"})
	if err != nil {
		return nil, err
	}
	return &skipOptions{Job: job, Key: args[0], Reason: c.String("reason")}, nil
}

// Validate checks the reason, the job and the key.
func (o *skipOptions) Validate() error {
	if err := fleet.CheckSkipReason(o.Reason); err != nil {
		return err
	}
	if err := o.Job.Validate(); err != nil {
		return err
	}
	_, err := o.key()
	return err
}

// key is KEY as the server takes it: a JSON object for a composite key,
// else the text typed, which the server compares with a one-column key's
// value as text.
func (o *skipOptions) key() (driver.Key, error) {
	if strings.TrimSpace(o.Key) == "" {
		return driver.Key{}, driver.Invalidf("KEY: must be the target's key, got an empty text")
	}
	if !strings.HasPrefix(strings.TrimSpace(o.Key), "{") {
		return driver.TextKey(o.Key), nil
	}
	var k driver.Key
	if err := json.Unmarshal([]byte(o.Key), &k); err != nil {
		return driver.Key{}, driver.Invalidf("KEY: a composite key is a JSON object of its columns: %v", err)
	}
	return k, nil
}

// runSkip sets the target aside.
func runSkip(ctx context.Context, d deps, o *skipOptions, out io.Writer) error {
	key, err := o.key()
	if err != nil {
		return err
	}
	return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) (fleet.Skipped, error) {
		return fleet.Skip(ctx, conn, o.Job, key, o.Reason)
	}, func(s fleet.Skipped) {
		if s.Proposal != nil {
			say(out, "job %s is two-person: proposed the skip of %s; it is done when another role approves it:", s.JobID, terminalSafe(s.Key.String()))
			say(out, "  chunks approve --digest %s %s", s.Digest, s.JobID)
			return
		}
		if !s.Skipped {
			say(out, "job %s: %s was already skipped by %s at %s (%s); nothing changed", s.JobID, terminalSafe(s.Key.String()),
				terminalSafe(s.By), s.At.UTC().Format("2006-01-02 15:04:05 UTC"), terminalSafe(s.Reason))
			return
		}
		found := "its row matches now"
		if s.Found != "" {
			found = terminalSafe(s.Found)
		}
		say(out, "job %s: skipped %s (%s); the job will never change it", s.JobID, terminalSafe(s.Key.String()), found)
		if s.Paused {
			say(out, "job %s is paused: chunks resume %[1]s gives it back to the workers", s.JobID)
		}
	})
}
