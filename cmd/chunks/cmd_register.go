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

func registerCommand() *cli.Command {
	return &cli.Command{
		Name:  "register",
		Usage: "register an approved plan; says whether it was new or already there",
		UsageText: "chunks register [--change NAME] [--dsn DSN] [--schema S] PLAN.json\n" +
			"chunks register [--change NAME] --tenant T --chunk-size N --allow-partial --from-query SQL JOB",
		Description: "PLAN.json is {\"job_id\", \"tenant\", \"targets\": [{\"id\", \"revision\", \"qty\"}, ...], \"chunk_size\",\n" +
			"\"allow_partial\": true}, read strictly (no duplicate keys, integers only); - reads stdin.\n" +
			"Registering the same approval again changes nothing; a different one under the same id is a\n" +
			"conflict (exit 3).\n" +
			"With --change NAME, PLAN.json is a job of the declared change NAME (chunks change define): the\n" +
			"same five keys, its targets objects of exactly the change's key, version, expect and\n" +
			"set_from_target fields ({\"payment_id\": 42, \"lock_version\": 3, \"amount_cents\": 1200,\n" +
			"\"reason\": \"chargeback\"}), checked by the server against the change and stored sorted by key.\n" +
			"With --from-query, the job JOB's targets are the rows of SQL, run as campaign create\n" +
			"--from-query runs it (one statement, in a READ ONLY transaction, the approval frozen at that\n" +
			"moment; its columns named as the targets' fields), and --tenant, --chunk-size and\n" +
			"--allow-partial are the plan's other keys.\n" +
			"--digest SHA256 pins the plan reviewed (chunks plan prints its digest): a plan or a change\n" +
			"definition that is not exactly what was reviewed is a conflict (exit 3), and nothing is\n" +
			"registered. Under a two-person policy (chunks policy set) the job is recorded as proposed by\n" +
			"the session's user and runs once another role approves its digest (chunks approve). With\n" +
			"--json it prints {\"job_id\", (\"change\",) \"created\", \"digest\"}.\n\n" +
			"Example:\n  chunks --schema lab register plan.json\n  chunks --schema lab register --change hold_payment holds-1.json\n" +
			"  chunks --schema lab register --change hold_payment --tenant 42 --chunk-size 10 --allow-partial \\\n" +
			"    --from-query \"select payment_id, lock_version, amount_cents, 'chargeback' as reason from shop.payments where payment_id in (4, 5)\" holds-2",
		Flags: []cli.Flag{changeFlag(),
			&cli.StringFlag{Name: "from-query", Usage: "take the targets from this query's rows (id, revision, qty; with --change, the change's fields)"},
			&cli.StringFlag{Name: "tenant", Usage: "with --from-query: the job's tenant"},
			&cli.IntFlag{Name: "chunk-size", Usage: "with --from-query: targets per chunk"},
			&cli.BoolFlag{Name: "allow-partial", Usage: "with --from-query: must be given, each chunk commits on its own"},
			&cli.StringFlag{Name: "digest", Usage: "refuse the plan unless its digest is this `SHA256` (the one chunks plan printed for review)"},
		},
		Action: action(parseRegister, runRegister),
	}
}

// parseRegister reads PLAN.json (parsePlan), or with --from-query takes
// JOB and the plan's keys from the flags (a usage error when one is
// missing, or when they come without --from-query).
func parseRegister(c *cli.Context) (*planOptions, error) {
	o, err := parseRegisterPlan(c)
	if err != nil {
		return o, err
	}
	if c.IsSet("digest") {
		if err := driver.CheckDigest("digest", c.String("digest")); err != nil {
			return o, err
		}
		o.Digest = c.String("digest")
	}
	return o, nil
}

// parseRegisterPlan is parseRegister's plan: PLAN.json, or JOB and the
// flags of --from-query.
func parseRegisterPlan(c *cli.Context) (*planOptions, error) {
	query := c.String("from-query")
	if query == "" {
		for _, f := range []string{"from-query", "tenant", "chunk-size", "allow-partial"} {
			if c.IsSet(f) {
				return nil, usagef("--%s goes with a non-empty --from-query; a PLAN.json has its own job_id, tenant, chunk_size and allow_partial", f)
			}
		}
		return parsePlan(c)
	}
	o, err := changeOption(c)
	if err != nil {
		return nil, err
	}
	args, err := positional(c, jobParam)
	if err != nil {
		return nil, err
	}
	if err := requireFlags(c, "tenant", "chunk-size", "allow-partial"); err != nil {
		return nil, err
	}
	o.Query = query
	o.Plan = driver.Plan{JobID: args[0], Tenant: c.String("tenant"), ChunkSize: c.Int("chunk-size"), AllowPartial: c.Bool("allow-partial")}
	return o, nil
}

// readPlanTargets fills o's plan with the rows of its --from-query, read
// on conn (nothing to do without one).
func readPlanTargets(ctx context.Context, conn *pgx.Conn, o *planOptions) error {
	if o.Query == "" {
		return nil
	}
	if o.Change == "" {
		ct, err := driver.CampaignTargetsFromQuery(ctx, conn, o.Query)
		if err != nil {
			return fmt.Errorf("--from-query: %w", err)
		}
		o.Plan.Targets = ct.Targets
		return nil
	}
	ct, err := driver.ChangeCampaignTargetsFromQuery(ctx, conn, o.Query)
	if err != nil {
		return fmt.Errorf("--from-query: %w", err)
	}
	p := o.Plan
	o.ChangePlan = driver.ChangePlan{JobID: p.JobID, Tenant: p.Tenant, ChunkSize: p.ChunkSize, AllowPartial: p.AllowPartial,
		Targets: make([]map[string]any, len(ct.Objects))}
	for i, obj := range ct.Objects {
		dec := json.NewDecoder(bytes.NewReader(obj))
		dec.UseNumber()
		if err := dec.Decode(&o.ChangePlan.Targets[i]); err != nil {
			return fmt.Errorf("--from-query: row %d: %w", i+1, err)
		}
	}
	return nil
}

// runRegister registers the plan (of orders, or with --change of a declared
// change), saying whether it was new.
func runRegister(ctx context.Context, d deps, o *planOptions, out io.Writer) error {
	var created bool
	var digest driver.PlanDigest
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		if err := readPlanTargets(ctx, conn, o); err != nil {
			return err
		}
		// The digest and the registration see one snapshot: what register
		// records is what the digest covers.
		return pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) (err error) {
			if o.Change == "" {
				digest, err = driver.DigestPlan(ctx, tx, o.Plan)
			} else {
				digest, err = driver.DigestChangePlan(ctx, tx, o.Change, o.ChangePlan)
			}
			if err != nil {
				return err
			}
			if o.Digest != "" && digest.Digest != o.Digest {
				return driver.NewError(driver.ErrConflict, nil, "register: the plan's digest is %s, not %s (the one reviewed): the plan or its change is not what was reviewed; nothing was registered",
					digest.Digest, o.Digest)
			}
			if o.Change == "" {
				created, err = driver.Register(ctx, tx, o.Plan)
			} else {
				created, err = driver.RegisterChange(ctx, tx, o.Change, o.ChangePlan)
			}
			return err
		})
	})
	if err != nil {
		return err
	}
	jobID, tenant, chunkSize, targets, of := o.Plan.JobID, o.Plan.Tenant, o.Plan.ChunkSize, plural(len(o.Plan.Targets), "order"), ""
	reply := map[string]any{"job_id": jobID, "created": created, "digest": digest.Digest}
	if o.Change != "" {
		p := o.ChangePlan
		jobID, tenant, chunkSize, targets, of = p.JobID, p.Tenant, p.ChunkSize, plural(len(p.Targets), "target"), " of change "+o.Change
		reply = map[string]any{"job_id": jobID, "change": o.Change, "created": created, "digest": digest.Digest}
	}
	if d.json {
		return printJSON(out, reply)
	}
	switch {
	case created && digest.TwoPerson:
		say(out, "proposed job %s%s: %s of %s, %d per chunk (digest %s)", jobID, of, targets, tenant, chunkSize, digest.Digest)
		say(out, "it runs once another role approves it: chunks approve --digest %s %s", digest.Digest, jobID)
	case created:
		say(out, "registered job %s%s: %s of %s, %d per chunk", jobID, of, targets, tenant, chunkSize)
	default:
		say(out, "job %s was already registered with this approval; nothing changed", jobID)
	}
	return nil
}
