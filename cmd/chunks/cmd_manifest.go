package main

import (
	"io"
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
		Action: func(c *cli.Context) error {
			path, err := fileArg(c, "ITEMS.json")
			if err != nil {
				return err
			}
			if err := requireFlags(c, "job-id", "tenant", "chunk-size"); err != nil {
				return err
			}
			data, err := readInput(path)
			if err != nil {
				return err
			}
			items, err := driver.ParseTargets(data)
			if err != nil {
				return err
			}
			plan, err := driver.Manifest(c.String("job-id"), c.String("tenant"), items, c.Int("chunk-size"), c.Bool("allow-partial"))
			if err != nil {
				return err
			}
			return printJSON(stdout, plan)
		},
	}
}

// planArg reads the command's PLAN.json argument (- is stdin) as a strict
// plan, for register and check alike.
func planArg(c *cli.Context) (driver.Plan, error) {
	path, err := fileArg(c, "PLAN.json")
	if err != nil {
		return driver.Plan{}, err
	}
	data, err := readInput(path)
	if err != nil {
		return driver.Plan{}, err
	}
	return driver.ParsePlan(data)
}

// readInput reads a file, or stdin for "-", refusing at once (without
// reading further) one larger than driver.MaxInputBytes.
func readInput(path string) (data []byte, err error) {
	in, name := os.Stdin, "stdin"
	if path != "-" {
		f, err := os.Open(path)
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
