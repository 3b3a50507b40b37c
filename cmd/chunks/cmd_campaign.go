package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
)

func campaignCommand() *cli.Command {
	return &cli.Command{
		Name:  "campaign",
		Usage: "one approval of any size, registered as many jobs in one transaction, run and reported as one",
		Description: "A campaign splits its targets, sorted by id, into jobs NAME-000001, NAME-000002, ... of whole\n" +
			"chunks (at most 64 targets each), and records them, with a campaign record, in one transaction.\n" +
			"The fleet's workers (chunks worker) drain its jobs like any others.",
		Subcommands: []*cli.Command{
			campaignCreateCommand(),
			campaignStatusCommand(),
			campaignReportCommand(),
			campaignPlanCommand(),
			campaignCheckCommand(),
			campaignApproveCommand(),
			campaignUndoCommand(),
			campaignSkipCommand(),
			campaignArchiveCommand(),
			campaignPauseResumeCommand("pause", runCampaignPause, "stop the workers from starting any chunk of the campaign"),
			campaignPauseResumeCommand("resume", runCampaignResume, "give every paused job of the campaign back to the workers"),
		},
	}
}

func campaignCreateCommand() *cli.Command {
	return &cli.Command{
		Name:      "create",
		Usage:     "register a campaign from a file of targets or from a query",
		UsageText: "chunks campaign create (--tenant T | --change CHANGE --tenant-from COLUMN) --chunk-size N --allow-partial [--queue-window W] [--change CHANGE] NAME (FILE | --from-query SQL)",
		Description: "FILE (- for stdin) is a JSON array or JSON Lines of {\"id\", \"revision\", \"qty\"}, read strictly\n" +
			"as a job's targets (at most 1,000,000 targets, 4096 bytes per entry and 128 MiB). --from-query runs SQL in a READ ONLY\n" +
			"transaction and takes its rows (id, revision, qty) as the approval, frozen at that moment.\n" +
			"A bad entry, a duplicate id or an empty approval is refused before anything is written, naming\n" +
			"the line, index or row (exit 2). Re-creating the identical campaign changes nothing; a different\n" +
			"one under NAME is a conflict naming the first difference (exit 3). --queue-window is how many of\n" +
			"its jobs the fleet's queue holds at once (default 16), so a job registered later is not starved.\n" +
			"With --change, the campaign is of a declared change (chunks change list): FILE's entries are its\n" +
			"targets, objects of exactly the change's fields, and --from-query's columns are named as those\n" +
			"fields; the server checks each as register --change does, naming the line, index or row.\n" +
			"--tenant-from COLUMN (with --change, instead of --tenant) makes one campaign over many tenants:\n" +
			"each target's tenant is its COLUMN (a column of --from-query, or a field of FILE's entries, a\n" +
			"value of the change's tenant column), taken out of the target; each job holds one tenant's\n" +
			"targets, one approval and digest cover them all, and campaign status shows progress by tenant.\n\n" +
			"Example:\n  chunks --schema lab campaign create --tenant alien-desert --chunk-size 10 --allow-partial \\\n" +
			"    --from-query \"select id, revision, qty from orders where state = 'pending'\" festival\n" +
			"  chunks --schema lab campaign create --tenant alien-desert --chunk-size 10 --allow-partial \\\n" +
			"    spring - < targets.jsonl\n" +
			"  chunks --schema lab campaign create --change hold_payment --tenant 42 --chunk-size 10 --allow-partial \\\n" +
			"    --from-query \"select payment_id, lock_version, amount_cents, 'chargeback' as reason from shop.payments where status = 'captured'\" payment-holds\n" +
			"  chunks --schema lab campaign create --change hold_payment --tenant-from merchant_id --chunk-size 10 --allow-partial \\\n" +
			"    --from-query \"select merchant_id, payment_id, lock_version, amount_cents, 'chargeback' as reason from shop.payments where status = 'captured'\" every-hold",
		Flags:  campaignCreateFlags(),
		Action: action(parseCampaignCreate, runCampaignCreate),
	}
}

// campaignCreateFlags are campaign create's flags, which campaign plan takes too.
func campaignCreateFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "tenant", Usage: "the tenant of every target (required, unless --tenant-from)"},
		&cli.StringFlag{Name: "tenant-from", Usage: "with --change: each target's tenant is this `COLUMN` of its row (one campaign over many tenants)"},
		&cli.IntFlag{Name: "chunk-size", Usage: "orders per chunk, 1 to 10 (required)"},
		&cli.BoolFlag{Name: "allow-partial", Usage: "must be given: each chunk commits on its own (required)"},
		&cli.IntFlag{Name: "queue-window", Value: driver.DefaultQueueWindow, Usage: "jobs of the campaign queued at once"},
		&cli.StringFlag{Name: "from-query", Usage: "take the targets from this query's rows (id, revision, qty; with --change, the change's fields)"},
		&cli.StringFlag{Name: "change", Usage: "the declared change the campaign's targets are of (default: the orders' cancellation)"},
	}
}

// campaignCreateOptions is chunks campaign create NAME (FILE | --from-query SQL).
type campaignCreateOptions struct {
	Spec         driver.CampaignSpec // NAME, --tenant, --chunk-size, --queue-window and --change
	File         string              // FILE, - for stdin; "" with --from-query
	Query        string              // --from-query SQL
	AllowPartial bool                // --allow-partial, which must be given
}

// parseCampaignCreate fills the options: NAME and FILE, or NAME and
// --from-query, and the required flags (a usage error otherwise).
func parseCampaignCreate(c *cli.Context) (*campaignCreateOptions, error) {
	o := &campaignCreateOptions{Query: c.String("from-query"), AllowPartial: c.Bool("allow-partial"),
		Spec: driver.CampaignSpec{Tenant: c.String("tenant"), ChunkSize: c.Int("chunk-size"), QueueWindow: c.Int("queue-window"),
			Change: c.String("change"), TenantFrom: c.String("tenant-from")}}
	params := []param{nameParam, fileParam("FILE")}
	second := c.Args().Get(1) // FILE, - (stdin), or a flag typed after NAME
	switch {
	case o.Query != "" && (second == "-" || second != "" && !strings.HasPrefix(second, "-")):
		return o, usagef("campaign create takes FILE or --from-query, not both")
	case o.Query != "":
		params = params[:1]
	case c.Args().Len() == 1:
		return o, usagef("campaign create takes NAME and one FILE (- for stdin), or NAME and --from-query SQL")
	}
	args, err := positional(c, params...)
	if err != nil {
		return o, err
	}
	required := []string{"tenant", "chunk-size", "allow-partial"}
	if o.Spec.TenantFrom != "" {
		required = required[1:] // --tenant-from instead
	}
	if err := requireFlags(c, required...); err != nil {
		return o, err
	}
	o.Spec.Name = args[0]
	if o.Query == "" {
		o.File = args[1]
	}
	return o, nil
}

// Validate checks --allow-partial and the campaign's spec.
func (o *campaignCreateOptions) Validate() error {
	if !o.AllowPartial {
		return usagef("--allow-partial must be given: each chunk commits on its own")
	}
	return o.Spec.Validate()
}

// runCampaignCreate reads the targets (the file, before connecting, or the
// query's rows) and records the campaign.
func runCampaignCreate(ctx context.Context, d deps, o *campaignCreateOptions, out io.Writer) error {
	var created driver.CampaignCreated
	err := withCampaignTargets(ctx, d, o, func(ctx context.Context, conn *pgx.Conn, ct driver.CampaignTargets) (err error) {
		created, err = driver.CreateCampaign(ctx, conn, o.Spec, ct)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		return printJSON(out, created)
	}
	if created.Created && o.Spec.Change != "" {
		of := o.Spec.Tenant
		if o.Spec.TenantFrom != "" {
			of = "each one's " + o.Spec.TenantFrom
		}
		say(out, "created campaign %s of change %s: %s of %s in %s of up to %d, %d per chunk (digest %s)", o.Spec.Name, o.Spec.Change,
			plural(created.Targets, "target"), of, plural(created.Jobs, "job"), driver.CampaignJobTargets(o.Spec.ChunkSize, true),
			o.Spec.ChunkSize, created.Digest[:12])
	} else if created.Created {
		say(out, "created campaign %s: %s of %s in %s of up to %d, %d per chunk (digest %s)", o.Spec.Name,
			plural(created.Targets, "order"), o.Spec.Tenant, plural(created.Jobs, "job"), driver.CampaignJobTargets(o.Spec.ChunkSize, false),
			o.Spec.ChunkSize, created.Digest[:12])
	} else {
		say(out, "campaign %s was already created with this approval; nothing changed", o.Spec.Name)
	}
	return nil
}

// withCampaignTargets reads the targets of campaign create (and plan):
// FILE before connecting, or --from-query's rows on the connection; then
// it calls fn with them on that connection.
func withCampaignTargets(ctx context.Context, d deps, o *campaignCreateOptions,
	fn func(ctx context.Context, conn *pgx.Conn, ct driver.CampaignTargets) error) error {
	var ct driver.CampaignTargets
	if o.Query == "" {
		var err error
		if ct, err = readCampaignFile(d.stdin, o.File, o.Spec.Change != ""); err != nil {
			return err
		}
	}
	return d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		if o.Query != "" {
			read := driver.CampaignTargetsFromQuery
			if o.Spec.Change != "" {
				read = driver.ChangeCampaignTargetsFromQuery
			}
			if ct, err = read(ctx, conn, o.Query); err != nil {
				return fmt.Errorf("--from-query: %w", err)
			}
		}
		return fn(ctx, conn, ct)
	})
}

// readCampaignFile reads the targets of path, or of stdin for -: a
// declared change's when ofChange.
func readCampaignFile(stdin io.Reader, path string, ofChange bool) (ct driver.CampaignTargets, err error) {
	r := stdin
	if path != "-" {
		f, err := openInput(path)
		if err != nil {
			return ct, err
		}
		defer func() {
			if cerr := f.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
		r = f
	}
	if ofChange {
		return driver.ReadChangeCampaignTargets(r)
	}
	return driver.ReadCampaignTargets(r)
}

// campaignOptions are the options of a campaign command that takes only
// the campaign: chunks campaign status NAME.
type campaignOptions struct {
	Name string
}

// parseCampaign fills the options of a command on one campaign: its NAME.
func parseCampaign(c *cli.Context) (*campaignOptions, error) {
	name, err := nameArg(c)
	return &campaignOptions{Name: name}, err
}

// Validate checks the campaign's name.
func (o *campaignOptions) Validate() error { return driver.CheckCampaignName(o.Name) }

// campaignExample is the Example section of a campaign subcommand's help:
// the campaign spring made from targets.jsonl, then lines.
func campaignExample(lines ...string) string {
	create := "chunks --schema lab campaign create --tenant alien-desert --chunk-size 10 --allow-partial spring targets.jsonl"
	return "\n\nExample:\n  " + strings.Join(append([]string{create}, lines...), "\n  ")
}

func campaignStatusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "targets, committed, remaining, jobs by state, rate and ETA of a campaign",
		UsageText: "chunks campaign status [--json] NAME",
		Description: "One query over the campaign's own jobs. jobs waiting are not yet in the fleet's queue: each\n" +
			"job of the campaign that finishes releases the next. rate is over about the last minute, from\n" +
			"what the fleet's workers saw (unknown when no worker ran it); ETA says when nothing can move.\n" +
			"It reads no row of the table: drift is campaign report's, which reads every committed row." +
			campaignExample("chunks --schema lab campaign status spring", "chunks --schema lab --json campaign status spring"),
		Action: action(parseCampaign, runCampaignStatus),
	}
}

// runCampaignStatus prints the campaign's progress.
func runCampaignStatus(ctx context.Context, d deps, o *campaignOptions, out io.Writer) error {
	return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) (driver.CampaignProgress, error) {
		return driver.CampaignStatus(ctx, conn, o.Name)
	}, func(st driver.CampaignProgress) {
		rate, eta := "unknown", fleet.CampaignETA(st)
		if st.RatePerSecond != nil {
			rate = fmt.Sprintf("%.1f/s", *st.RatePerSecond)
		}
		if st.Stalled && !st.Paused && st.Remaining-st.AbandonedTargets > 0 {
			eta += " (chunks status says why)"
		}
		paused := ""
		if st.Paused {
			paused = " (paused)"
		}
		abandoned := ""
		if st.JobsAbandoned > 0 {
			abandoned = fmt.Sprintf(", %d abandoned (%d targets never run)", st.JobsAbandoned, st.AbandonedTargets)
		}
		say(out, "campaign %s%s: %d targets, %d committed, %d remaining; jobs: %d done, %d running, %d queued, %d paused, %d waiting%s of %d; rate %s, ETA %s",
			st.Name, paused, st.Targets, st.Committed, st.Remaining, st.JobsDone, st.JobsRunning, st.JobsQueued,
			st.JobsPaused, st.JobsWaiting, abandoned, st.Jobs, rate, eta)
		// A campaign over many tenants: each one's progress (the first ten).
		for _, tp := range st.Tenants[:min(len(st.Tenants), 10)] {
			say(out, "  tenant %s: %d of %d targets committed; %d of %s done", terminalSafe(tp.Tenant), tp.Committed, tp.Targets,
				tp.JobsDone, plural(tp.Jobs, "job"))
		}
		if len(st.Tenants) > 10 {
			say(out, "  (%s not listed: --json lists every one)", plural(len(st.Tenants)-10, "tenant"))
		}
	})
}

func campaignReportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "matching, drifted and missing rows of a campaign",
		UsageText: "chunks campaign report [--json] NAME",
		Description: "report's rules over every job of the campaign, in one query. With --json, drifted and\n" +
			"missing are id lists (a declared change's keys). The last line says which campaign undid this\n" +
			"one, or which campaign this undo undoes (--json: undone_by and undoes, null when none)." +
			campaignExample("chunks --schema lab drain spring-000001", "chunks --schema lab campaign report spring"),
		Action: action(parseCampaign, runCampaignReport),
	}
}

// runCampaignReport prints the campaign's matching, drifted and missing
// orders.
func runCampaignReport(ctx context.Context, d deps, o *campaignOptions, out io.Writer) error {
	return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) (driver.CampaignDrift, error) {
		return driver.CampaignReport(ctx, conn, o.Name)
	}, func(r driver.CampaignDrift) {
		say(out, "campaign %s: %d targets, %d committed, %d remaining: %d matching, %d drifted %s, %d missing %s%s",
			r.Name, r.Targets, r.Committed, r.Remaining, r.Matching, r.DriftedCount, keyList(r.Drifted), r.MissingCount, keyList(r.Missing),
			skippedCount(r.SkippedCount))
		printSkips(out, r.Skipped)
		printCampaignLineage(out, r)
	})
}

// printCampaignLineage says how the campaign is tied to an undo, when it
// is, as printLineage does for a job.
func printCampaignLineage(out io.Writer, r driver.CampaignDrift) {
	switch {
	case r.Undoes != nil:
		say(out, "campaign %s is the undo of %s: its matching rows are as they were before %[2]s", r.Name, *r.Undoes)
	case r.UndoneBy != nil:
		say(out, "campaign %s was undone by %s (chunks campaign report %[2]s shows what it restored)", r.Name, *r.UndoneBy)
	}
}

// campaignPauseResumeCommand is chunks campaign pause or resume (verb),
// whose logic is run.
func campaignPauseResumeCommand(verb string, run runFunc[*campaignOptions], usage string) *cli.Command {
	return &cli.Command{
		Name:      verb,
		Usage:     usage,
		UsageText: "chunks campaign " + verb + " [--json] NAME",
		Description: "Acts on every job of the campaign in one transaction; waits for its chunks in flight (up to 5 s)." +
			campaignExample("chunks --schema lab campaign pause spring", "chunks --schema lab campaign resume spring"),
		Action: action(parseCampaign, run),
	}
}

// runCampaignPause pauses every job of the campaign.
func runCampaignPause(ctx context.Context, d deps, o *campaignOptions, out io.Writer) error {
	return campaignChange(ctx, d, o.Name, out, driver.PauseCampaign,
		"paused campaign %s: %s paused", "campaign %s was already paused; nothing changed")
}

// runCampaignResume gives every paused job of the campaign back to the
// workers.
func runCampaignResume(ctx context.Context, d deps, o *campaignOptions, out io.Writer) error {
	return campaignChange(ctx, d, o.Name, out, driver.ResumeCampaign,
		"resumed campaign %s: %s queued again", "campaign %s was not paused; nothing changed")
}

// campaignChange runs op on the campaign.
func campaignChange(ctx context.Context, d deps, name string, out io.Writer,
	op func(context.Context, driver.DB, string) (driver.CampaignChange, error), changedMsg, sameMsg string) error {
	return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) (driver.CampaignChange, error) {
		return op(ctx, conn, name)
	}, func(ch driver.CampaignChange) {
		if ch.Changed {
			say(out, changedMsg, name, plural(ch.Jobs, "job"))
		} else {
			say(out, sameMsg, name)
		}
	})
}

func campaignCheckCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "preflight: would every target not yet committed take its change now?",
		UsageText: "chunks campaign check [--json] [--max-listed N] NAME",
		Description: "Writes nothing. For each remaining target: is its order there, of the tenant, pending, at the\n" +
			"approved revision and qty? Exit 0 when all are, 3 (conflict) when any is not, listing the first." +
			campaignExample("chunks --schema lab campaign check --max-listed 5 spring"),
		Flags:  []cli.Flag{&cli.IntFlag{Name: "max-listed", Value: 100, Usage: "problems listed, by id"}},
		Action: action(parseCampaignCheck, runCampaignCheck),
	}
}

// campaignCheckOptions is chunks campaign check [--max-listed N] NAME.
type campaignCheckOptions struct {
	Name      string
	MaxListed int // --max-listed: the problems listed, by id
}

// parseCampaignCheck fills NAME and --max-listed.
func parseCampaignCheck(c *cli.Context) (*campaignCheckOptions, error) {
	name, err := nameArg(c)
	return &campaignCheckOptions{Name: name, MaxListed: c.Int("max-listed")}, err
}

// Validate checks the name and --max-listed.
func (o *campaignCheckOptions) Validate() error {
	if err := driver.CheckCampaignName(o.Name); err != nil {
		return err
	}
	return driver.CheckMaxListed(o.MaxListed)
}

// runCampaignCheck prints the first problems and the counts; any problem
// is a conflict.
func runCampaignCheck(ctx context.Context, d deps, o *campaignCheckOptions, out io.Writer) error {
	var ch driver.CampaignCheck
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		ch, err = driver.CheckCampaign(ctx, conn, o.Name, o.MaxListed)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		if err := printJSON(out, ch); err != nil {
			return err
		}
	} else {
		for _, p := range ch.Listed {
			say(out, "%s", p.Problem)
		}
		say(out, "campaign %s: %d of %d targets remaining, %d ok, %d with a problem", ch.Name, ch.Remaining, ch.Targets, ch.OK, ch.Problems)
	}
	if ch.Problems > 0 {
		return driver.NewError(driver.ErrConflict, nil, "campaign %s: %d targets cannot take their change now", o.Name, ch.Problems)
	}
	return nil
}

func campaignUndoCommand() *cli.Command {
	return &cli.Command{
		Name:      "undo",
		Usage:     "register one undo campaign, built from the audit of every job of a paused or finished campaign",
		UsageText: "chunks campaign undo [--json] [--as UNDO] NAME",
		Description: "Every job of NAME with committed orders still as it left them gets its undo (chunks undo's\n" +
			"rules: drifted and missing orders are left alone), all recorded as campaign UNDO (default\n" +
			"NAME-undo) in one transaction; the fleet restores them. Pause NAME first (chunks campaign pause).\n" +
			"A campaign of a declared change is undone the same way: its rows still as it left them get\n" +
			"their values from before it back, by undo jobs of the same change." +
			campaignExample("chunks --schema lab drain spring-000001", "chunks --schema lab campaign undo --as spring-back spring",
				"chunks --schema lab campaign status spring-back"),
		Flags:  []cli.Flag{&cli.StringFlag{Name: "as", Usage: "the undo campaign's name (default NAME-undo)"}},
		Action: action(parseCampaignUndo, runCampaignUndo),
	}
}

// campaignUndoOptions is chunks campaign undo [--as UNDO] NAME.
type campaignUndoOptions struct {
	Name string
	As   string // --as: the undo campaign's name; "" is NAME-undo
}

// parseCampaignUndo fills NAME and --as.
func parseCampaignUndo(c *cli.Context) (*campaignUndoOptions, error) {
	name, err := nameArg(c)
	return &campaignUndoOptions{Name: name, As: c.String("as")}, err
}

// Validate checks the name, and --as when given.
func (o *campaignUndoOptions) Validate() error {
	if err := driver.CheckCampaignName(o.Name); err != nil {
		return err
	}
	if o.As != "" {
		return driver.CheckUndoName(o.As)
	}
	return nil
}

// runCampaignUndo registers the undo campaign.
func runCampaignUndo(ctx context.Context, d deps, o *campaignUndoOptions, out io.Writer) error {
	return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) (driver.CampaignUndo, error) {
		return driver.UndoCampaign(ctx, conn, o.Name, o.As)
	}, func(u driver.CampaignUndo) {
		if !u.Created {
			say(out, "campaign %s already is the undo of %s; nothing changed", u.Name, o.Name)
			return
		}
		// A declared change's undo restores rows, by key.
		noun := "order"
		if u.Change != "" {
			noun = "row"
		}
		say(out, "registered undo campaign %s of %s: %s in %s; left alone: drifted %s, missing %s", u.Name, o.Name,
			plural(u.Targets, noun), plural(u.Jobs, "job"), keyList(u.Drifted), keyList(u.Missing))
	})
}
