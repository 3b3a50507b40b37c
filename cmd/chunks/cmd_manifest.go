package main

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func manifestCommand() *cli.Command {
	return &cli.Command{
		Name:      "manifest",
		Usage:     "validate an approval and print the normalized plan (no database)",
		UsageText: "chunks manifest --job-id J --tenant T --chunk-size N --allow-partial ITEMS.json",
		Description: "ITEMS.json is a list of {\"id\", \"revision\", \"qty\"}; - reads it from stdin. The plan comes out\n" +
			"with the targets sorted by id, ready for chunks register.\n\n" +
			"Example:\n  chunks manifest --job-id festival-2026 --tenant alien-desert --chunk-size 10 \\\n" +
			"    --allow-partial items.json > plan.json",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "job-id", Usage: "the job's id: 1 to 64 of A-Z a-z 0-9 _ - (required)"},
			&cli.StringFlag{Name: "tenant", Usage: "the tenant whose orders these are (required)"},
			&cli.IntFlag{Name: "chunk-size", Usage: "orders per chunk, 1 to 10 (required)"},
			&cli.BoolFlag{Name: "allow-partial", Usage: "approve that each chunk commits on its own (required)"},
		},
		Action: action(parseManifest, runManifest),
	}
}

// manifestOptions is chunks manifest --job-id J --tenant T --chunk-size N
// --allow-partial ITEMS.json: the approval, with ITEMS.json read.
type manifestOptions struct {
	JobID        string          // --job-id
	Tenant       string          // --tenant
	ChunkSize    int             // --chunk-size
	AllowPartial bool            // --allow-partial
	Items        []driver.Target // ITEMS.json, read strictly and sorted by id
}

// parseManifest reads the flags and ITEMS.json (- reads stdin): the file is
// the command line's, and needs no database.
func parseManifest(c *cli.Context) (*manifestOptions, error) {
	path, err := fileArg(c, "ITEMS.json")
	if err != nil {
		return nil, err
	}
	if err := requireFlags(c, "job-id", "tenant", "chunk-size"); err != nil {
		return nil, err
	}
	o := &manifestOptions{JobID: c.String("job-id"), Tenant: c.String("tenant"),
		ChunkSize: c.Int("chunk-size"), AllowPartial: c.Bool("allow-partial")}
	data, err := readInput(path, c.App.Reader)
	if err == nil {
		o.Items, err = driver.ParseTargets(data)
	}
	return o, err
}

// Validate checks the approval as driver.Manifest does.
func (o *manifestOptions) Validate() error {
	_, err := o.plan()
	return err
}

// plan is the approval as a normalized plan.
func (o *manifestOptions) plan() (driver.Plan, error) {
	return driver.Manifest(o.JobID, o.Tenant, o.Items, o.ChunkSize, o.AllowPartial)
}

// runManifest prints the normalized plan (always JSON: it is chunks
// register's input).
func runManifest(_ context.Context, _ deps, o *manifestOptions, out io.Writer) error {
	plan, err := o.plan()
	if err != nil {
		return err
	}
	return printJSON(out, plan)
}

// planOptions are the options of a command that takes a plan: chunks
// register PLAN.json, chunks check PLAN.json, and with --change NAME the
// plan of a job of that declared change.
type planOptions struct {
	Plan       driver.Plan       // PLAN.json, read strictly (without --change)
	Change     string            // --change: the declared change; "" for the built-in cancellation
	ChangePlan driver.ChangePlan // PLAN.json with --change, read strictly (driver.ParseChangePlan)
	// Query is register's --from-query: the targets are its rows, and the
	// plan's other four keys are JOB, --tenant, --chunk-size and
	// --allow-partial (in Plan, or ChangePlan with --change).
	Query string
	// Digest is register's --digest: the plan must have exactly this
	// digest (the one reviewed); "" pins nothing.
	Digest string
}

// changeFlag is --change of register and check.
func changeFlag() cli.Flag {
	return &cli.StringFlag{Name: "change", Usage: "the plan is a job of the declared change `NAME` (chunks change define): its targets are objects of the change's fields"}
}

// parsePlan reads the command's PLAN.json argument (- is stdin) as a
// strict plan, for register and check alike.
func parsePlan(c *cli.Context) (*planOptions, error) {
	path, err := fileArg(c, "PLAN.json")
	if err != nil {
		return nil, err
	}
	data, err := readInput(path, c.App.Reader)
	if err != nil {
		return nil, err
	}
	o, err := changeOption(c)
	if err != nil {
		return nil, err
	}
	if o.Change != "" {
		o.ChangePlan, err = driver.ParseChangePlan(data)
		return o, err
	}
	o.Plan, err = driver.ParsePlan(data)
	return o, err
}

// changeOption is the options with --change, refused when given empty
// (never taken as "no change").
func changeOption(c *cli.Context) (*planOptions, error) {
	o := &planOptions{Change: c.String("change")}
	if c.IsSet("change") && o.Change == "" {
		return nil, driver.Invalidf(`change: must be the name of a declared change, got ""`)
	}
	return o, nil
}

// Validate checks the plan as driver.Manifest does (a plan read by
// parsePlan always passes; one built by hand may not).
func (o *planOptions) Validate() error {
	if o.Query != "" {
		if !o.Plan.AllowPartial {
			return usagef("--allow-partial must be given: each chunk commits on its own")
		}
		return nil // the rest once the query's rows are read
	}
	if o.Change != "" {
		return o.ChangePlan.Validate(o.Change)
	}
	p := o.Plan
	_, err := driver.Manifest(p.JobID, p.Tenant, p.Targets, p.ChunkSize, p.AllowPartial)
	return err
}

// readInput reads a file, or stdin for "-", refusing at once (without
// reading further) one larger than driver.MaxInputBytes.
func readInput(path string, stdin io.Reader) (data []byte, err error) {
	in, name := stdin, "stdin"
	if path != "-" {
		f, err := openInput(path)
		if err != nil {
			return nil, err
		}
		defer func() {
			if cerr := f.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
		in, name = f, path
	}
	data, err = io.ReadAll(io.LimitReader(in, driver.MaxInputBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > driver.MaxInputBytes {
		return nil, driver.Invalidf("%s: is larger than the 1 MiB limit (more than %d bytes)",
			driver.Excerpt(name, false), driver.MaxInputBytes)
	}
	return data, nil
}

// openInput opens the input file path. A file that cannot be read (there
// is none, it may not be read, it is a directory) is bad input, exit 2 as
// any other: an [driver.ErrInvalid] naming it.
func openInput(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err
		}
		return nil, driver.NewError(driver.ErrInvalid, err, "%s: cannot be read: %v", driver.Excerpt(path, true), err)
	}
	if info, err := f.Stat(); err == nil && info.IsDir() {
		return nil, errors.Join(driver.Invalidf("%s: cannot be read: it is a directory", driver.Excerpt(path, true)), f.Close())
	}
	return f, nil
}
