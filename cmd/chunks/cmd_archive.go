package main

import (
	"context"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
)

func archiveCommand() *cli.Command {
	return &cli.Command{
		Name:      "archive",
		Usage:     "put away the jobs that ended before a time ago: out of chunks status and the page, still reported",
		UsageText: "chunks archive --finished-before AGE [--dsn DSN] [--schema S] [--json]",
		Description: "Every job that ended (finished, or abandoned) more than AGE ago (30d, 12h, 90m; 0 for every\n" +
			"ended job) leaves chunks status, the status page and the metrics' counts. Its record stays:\n" +
			"chunks report, inspect, verify and undo answer for it as before. A job's end is its last\n" +
			"recorded chunk, its abandon or, for a job of orders run outside the fleet (which keeps no time\n" +
			"per chunk), its registration. chunks campaign archive NAME archives a whole ended campaign.\n" +
			"With --json it prints {\"archived\", \"jobs\" (the first 100), \"more\"}.\n\n" +
			"Example:\n  chunks --schema lab archive --finished-before 30d",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "finished-before", Usage: "archive the jobs that ended longer ago than `AGE` (30d, 12h, 90m, 0)"},
		},
		Action: action(parseArchive, runArchive),
	}
}

// archiveOptions is chunks archive --finished-before AGE.
type archiveOptions struct {
	Age string // as typed
}

func parseArchive(c *cli.Context) (*archiveOptions, error) {
	_, err := positional(c)
	return &archiveOptions{Age: c.String("finished-before")}, err
}

// Validate checks AGE.
func (o *archiveOptions) Validate() error {
	_, err := o.age()
	return err
}

// age is --finished-before: a Go duration, or a whole number of days (30d).
func (o *archiveOptions) age() (time.Duration, error) {
	if o.Age == "" {
		return 0, usagef("archive needs --finished-before AGE (30d, 12h, 90m; 0 archives every ended job)")
	}
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(o.Age, "d"); ok {
		var n int64
		n, err = strconv.ParseInt(days, 10, 32)
		d = time.Duration(n) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(o.Age)
	}
	if err != nil || d < 0 {
		return 0, driver.Invalidf("finished-before: must be an age such as 30d, 12h or 90m (0 or more), got %s", driver.Excerpt(o.Age, true))
	}
	return d, nil
}

// runArchive archives the jobs.
func runArchive(ctx context.Context, d deps, o *archiveOptions, out io.Writer) error {
	age, err := o.age()
	if err != nil {
		return err
	}
	return printResult(ctx, d, out, func(ctx context.Context, conn *pgx.Conn) (fleet.Archived, error) {
		return fleet.Archive(ctx, conn, age)
	}, func(a fleet.Archived) {
		if a.Archived == 0 {
			say(out, "no job ended more than %s ago that is not archived; nothing changed", o.Age)
			return
		}
		list := strings.Join(a.Jobs, " ")
		if a.More {
			list += " …"
		}
		say(out, "archived %s: %s (chunks report JOB still answers)", plural(a.Archived, "job"), terminalSafe(list))
	})
}
