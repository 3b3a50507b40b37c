package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func runCommand() *cli.Command {
	points := strings.Join(driver.Points, ", ")
	return &cli.Command{
		Name:      "run",
		Usage:     "run the job's next chunk in one transaction, on a connection of its own",
		UsageText: "chunks run [--fail-at POINT] [--crash-at POINT] [--tenant T] [--dsn DSN] [--schema S] [--json] JOB",
		Description: "Crash drills: --fail-at makes the hook at POINT return an error (before COMMIT the chunk\n" +
			"rolls back; after-commit keeps it), --crash-at kills this process with SIGKILL at POINT (the\n" +
			"server sees the connection drop). POINT is one of: " + points + ". A job that is already\n" +
			"done runs no chunk and so reaches no hook: the drill does not happen (exit 0, said on stdout).\n" +
			"With --tenant, through a chunks router: the chunk runs on the tenant's shard, as one transaction\n" +
			"there (no drill: it has no hook before its COMMIT).\n\n" +
			"Example:\n  chunks --schema lab run festival-2026\n  chunks --schema lab run --crash-at after-audit festival-2026",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "fail-at", Usage: "make the hook at `POINT` return an error"},
			&cli.StringFlag{Name: "crash-at", Usage: "SIGKILL this process at `POINT`"},
			tenantFlag(),
		},
		Action: action(parseRun, runRun),
	}
}

// runOptions is chunks run [--fail-at POINT] [--crash-at POINT] JOB.
type runOptions struct {
	Job     driver.JobRef
	FailAt  string // --fail-at: the hook at this point returns an error; "" for none
	CrashAt string // --crash-at: the process SIGKILLs itself at this point; "" for none
}

// parseRun fills runOptions from the command line.
func parseRun(c *cli.Context) (*runOptions, error) {
	job, err := parseJobRef(c)
	return &runOptions{Job: job, FailAt: c.String("fail-at"), CrashAt: c.String("crash-at")}, err
}

// Validate checks the drill points, then the job.
func (o *runOptions) Validate() error {
	if err := checkPoints(o.FailAt, o.CrashAt); err != nil {
		return err
	}
	return o.Job.Validate()
}

// runRun runs the job's next chunk on a connection of its own, with the
// drill's hook, and says what it did.
func runRun(ctx context.Context, d deps, o *runOptions, out io.Writer) error {
	job := o.Job
	change := changed(nil)
	if !d.json {
		var err error
		if change, err = jobChange(ctx, d, job); err != nil {
			return err
		}
	}
	cfg, err := d.connConfig()
	if err != nil {
		return err
	}
	res, err := driver.ChunkFileConfig(ctx, cfg, job, drillFault(o.FailAt, o.CrashAt, d.stderr))
	err = d.connectHint(err)
	keys := res.AllKeys()
	if err != nil && len(keys) == 0 {
		return err
	}
	// After an after-commit failure the chunk is committed: say so, then fail.
	if d.json {
		if perr := printJSON(out, chunkJSONOf(res)); perr != nil {
			return perr
		}
	} else if len(keys) == 0 {
		say(out, "job %s is already done (next_index %d); nothing to do", job.ID, res.NextIndex)
	} else {
		say(out, "job %s: %s; next_index %d%s", job.ID, change(keys), res.NextIndex, doneSuffix(res.Done))
	}
	return err
}

// jobChange is what the job's chunks do, read on a connection of its own:
// a job registered by chunks register cancels its orders, an undo
// (chunks undo) restores them, a job of a declared change (chunks register
// --change) changes the rows of its keys, and its undo restores them.
func jobChange(ctx context.Context, d deps, job driver.JobRef) (func(keys []driver.Key) string, error) {
	var lineage *driver.JobLineage // an unknown job: its chunk says so
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		lineage, err = job.Lineage(ctx, conn)
		return err
	})
	return changed(lineage), err
}

// changed says what chunks of the job of lineage l (nil: a cancel job)
// did to the orders or rows of the keys processed.
func changed(l *driver.JobLineage) func(keys []driver.Key) string {
	switch {
	case l == nil:
	case l.Kind == driver.KindRestore && l.Change != nil && l.Undoes != nil:
		before := *l.Undoes
		return func(keys []driver.Key) string {
			return "restored " + keyList(keys) + " to the values from before " + before
		}
	case l.Kind == driver.KindRestore:
		return func(keys []driver.Key) string { return "restored " + keyList(keys) + " to pending" }
	case l.Kind == driver.KindChange:
		return func(keys []driver.Key) string { return "changed " + keyList(keys) }
	}
	return func(keys []driver.Key) string { return "cancelled " + keyList(keys) }
}

func doneSuffix(done bool) string {
	if done {
		return "; the job is done"
	}
	return ""
}

// checkPoints refuses a --fail-at or --crash-at that is not a hook's point.
func checkPoints(failAt, crashAt string) error {
	for _, f := range []struct{ flag, point string }{{"fail-at", failAt}, {"crash-at", crashAt}} {
		if f.point != "" && !slices.Contains(driver.Points, f.point) {
			return usagef("--%s %s: POINT must be one of %s", f.flag, driver.Excerpt(f.point, true), strings.Join(driver.Points, ", "))
		}
	}
	return nil
}

// drillFault builds the hook of --fail-at and --crash-at (checked by
// checkPoints), or nil for no drill. The crash says on stderr what it does.
func drillFault(failAt, crashAt string, stderr io.Writer) driver.Fault {
	if failAt == "" && crashAt == "" {
		return nil
	}
	return func(point string) error {
		if point == crashAt {
			fmt.Fprintf(stderr, "chunks: --crash-at %s: killing this process (pid %d) with SIGKILL\n", point, os.Getpid())
			if err := syscall.Kill(os.Getpid(), syscall.SIGKILL); err != nil {
				return fmt.Errorf("--crash-at %s: %w", point, err)
			}
			select {} // SIGKILL cannot be caught; wait for it to land
		}
		if point == failAt {
			return fmt.Errorf("--fail-at %s: drill failure", point)
		}
		return nil
	}
}
