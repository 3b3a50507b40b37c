package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "preflight a plan: would every target take its change now, and would register conflict? (read-only)",
		UsageText: "chunks check [--change NAME] [--dsn DSN] [--schema S] [--json] PLAN.json",
		Description: "Reads PLAN.json as register does (- reads stdin) and answers in one SELECT, before anything\n" +
			"is registered: for each target, whether its order would be cancelled now or exactly why not\n" +
			"(missing, another tenant, its state, its revision moved, its qty differs), and whether the\n" +
			"job id is free, already registered with this approval (register would change nothing) or\n" +
			"taken by another one (a conflict). Nothing is locked or written.\n" +
			"Exit 0 when every target would apply and registering would not conflict, 3 when not, 2 for\n" +
			"an invalid plan. --json prints {\"job_id\", \"ok\", \"job\", \"job_problem\", \"targets\": [{\"id\",\n" +
			"\"ok\", \"problem\", \"committed\"}, ...]}. Through a chunks router (its --dsn) it needs nothing\n" +
			"more, as register: the plan's tenant picks the shard it reads.\n" +
			"With --change NAME, PLAN.json is a job of the declared change NAME, as chunks register --change\n" +
			"takes it: each target is judged against its row now, in the words its chunk would use\n" +
			"(\"payment_id 42: lock_version is 4, approved 3\"); --json prints {\"job_id\", \"ok\", \"job\",\n" +
			"\"job_problem\", \"targets\": [{\"key\", \"ok\", \"problem\", \"committed\"}, ...]}.\n\n" +
			"Example:\n  chunks --schema lab check plan.json && chunks --schema lab register plan.json\n" +
			"  chunks --schema lab check --change hold_payment holds-1.json",
		Flags:  []cli.Flag{changeFlag()},
		Action: action(parsePlan, runCheck),
	}
}

// runCheck preflights the plan and prints the answer; a plan that would
// not apply whole, or would conflict, is a conflict (exit 3) after it.
func runCheck(ctx context.Context, d deps, o *planOptions, out io.Writer) error {
	if o.Change != "" {
		return runCheckChange(ctx, d, o, out)
	}
	var res driver.PlanCheck
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		res, err = driver.CheckPlan(ctx, conn, o.Plan)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		err = printJSON(out, res)
	} else {
		printCheck(out, res)
	}
	if err != nil || res.OK {
		return err
	}
	return driver.NewError(driver.ErrConflict, nil, "%s", checkSummary(res))
}

// printCheck prints the answer of a check for a person.
func printCheck(out io.Writer, res driver.PlanCheck) {
	printJobVerdict(out, res.JobID, res.Job, res.JobProblem)
	problems := res.Problems()
	if len(problems) > 0 {
		t := newTable(out, "order", "would not be cancelled")
		for _, p := range problems {
			t.AppendRow([]any{p.ID, p.Problem})
		}
		t.Render()
	}
	committed := 0
	for _, target := range res.Targets {
		if target.Committed {
			committed++
		}
	}
	line := fmt.Sprintf("%d of %d targets would be cancelled now", len(res.Targets)-len(problems)-committed, len(res.Targets))
	if committed > 0 {
		line += fmt.Sprintf(", %d already are (committed by this job)", committed)
	}
	say(out, "%s; %d would not", line, len(problems))
}

// printJobVerdict says what register would do with the job id.
func printJobVerdict(out io.Writer, jobID, job, problem string) {
	say(out, "job %s: %s", jobID, terminalSafe(jobVerdict(job, problem)))
}

// jobVerdict is what register would do with the job id (check's Job and
// JobProblem), in words.
func jobVerdict(job, problem string) string {
	switch job {
	case driver.JobFree:
		return "the id is free; register would create the job"
	case driver.JobRegistered:
		return "already registered with this approval; register would change nothing"
	}
	return "register would refuse: " + problem
}

// checkSummary is the one line a failed check ends with, on stderr.
func checkSummary(res driver.PlanCheck) string {
	var parts []string
	if n := len(res.Problems()); n > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d targets would not be cancelled", n, len(res.Targets)))
	}
	if res.Job == driver.JobConflict {
		parts = append(parts, "registering would conflict")
	}
	return fmt.Sprintf("check: job %s: %s", res.JobID, strings.Join(parts, "; "))
}

// runCheckChange preflights the job of a declared change, as runCheck a
// plan: a plan that would not apply whole, or would conflict, is a
// conflict (exit 3) after the answer.
func runCheckChange(ctx context.Context, d deps, o *planOptions, out io.Writer) error {
	var res driver.ChangeCheck
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		res, err = driver.CheckChange(ctx, conn, o.Change, o.ChangePlan)
		return err
	})
	if err != nil {
		return err
	}
	var problems []driver.ChangeTargetCheck
	committed := 0
	for _, target := range res.Targets {
		switch {
		case target.Committed:
			committed++
		case !target.OK:
			problems = append(problems, target)
		}
	}
	if d.json {
		err = printJSON(out, res)
	} else {
		printJobVerdict(out, res.JobID, res.Job, res.JobProblem)
		if len(problems) > 0 {
			t := newTable(out, "key", "would not be changed")
			for _, p := range problems {
				t.AppendRow([]any{keyCell(p.Key), terminalSafe(p.Problem)})
			}
			t.Render()
		}
		line := fmt.Sprintf("%d of %d targets would be changed now", len(res.Targets)-len(problems)-committed, len(res.Targets))
		if committed > 0 {
			line += fmt.Sprintf(", %d already are (committed by this job)", committed)
		}
		say(out, "%s; %d would not", line, len(problems))
	}
	if err != nil || res.OK {
		return err
	}
	var parts []string
	if len(problems) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d targets would not be changed", len(problems), len(res.Targets)))
	}
	if res.Job == driver.JobConflict {
		parts = append(parts, "registering would conflict")
	}
	return driver.NewError(driver.ErrConflict, nil, "check: job %s: %s", res.JobID, strings.Join(parts, "; "))
}
