package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

// param is a positional argument: its name in the usage line (JOB) and how
// an error calls it (the job id).
type param struct {
	name, what string
	stdin      bool // a file: - reads stdin
}

var (
	jobParam  = param{name: "JOB", what: "the job id"}
	nameParam = param{name: "NAME", what: "the campaign name"}
)

// fileParam is a file argument, - for stdin.
func fileParam(name string) param { return param{name, name, true} }

// positional is the one way a command takes its positional arguments:
// exactly one per param, in order. The flag parser stops at the first
// argument, so a flag typed after it would be taken as an argument and
// ignored: it is refused, naming it (- alone is stdin, not a flag). A
// missing or an extra argument is refused too, before anything else.
func positional(c *cli.Context, params ...param) ([]string, error) {
	args := c.Args().Slice()
	path := cmdPath(c)
	var names []string
	stdin := ""
	for _, p := range params {
		names = append(names, p.name)
		if p.stdin {
			stdin = "; - reads stdin"
		}
	}
	usage := strings.Join(names, " ")
	if len(args) > 0 && len(params) > 0 {
		for _, a := range args[1:] {
			if strings.HasPrefix(a, "-") && a != "-" {
				return nil, usagef("flag %s after %s: put flags before %[2]s (chunks %s [flags] %s)",
					driver.Excerpt(a, false), params[0].what, path, usage)
			}
		}
	}
	switch {
	case len(args) == len(params):
		return args, nil
	case len(params) == 0:
		return nil, usagef("%s takes no arguments, got %s", path, argList(args))
	case len(args) < len(params):
		return nil, usagef("%s needs %s (chunks %s [flags] %s%s)", path, usage, path, usage, stdin)
	}
	return nil, usagef("%s takes %s, got %d: %s", path, argCount(names), len(args), driver.Excerpt(strings.Join(args, " "), false))
}

// argCount is what a command takes: one JOB argument, NAME FILE.
func argCount(names []string) string {
	if len(names) == 1 {
		return "one " + names[0] + " argument"
	}
	return strings.Join(names, " ")
}

// argList shows a command line's arguments in an error, bounded.
func argList(args []string) string { return driver.Excerpt(fmt.Sprintf("%q", args), false) }

// oneArg returns the command's one positional argument.
func oneArg(c *cli.Context, p param) (string, error) {
	args, err := positional(c, p)
	if err != nil {
		return "", err
	}
	return args[0], nil
}

// fileArg returns the one positional file argument (- for stdin).
func fileArg(c *cli.Context, name string) (string, error) { return oneArg(c, fileParam(name)) }

// nameArg returns the one positional NAME argument of a campaign command.
func nameArg(c *cli.Context) (string, error) { return oneArg(c, nameParam) }

// tenantFlag is --tenant of the job commands: the job must be that
// tenant's. A chunks router (chunks router install) needs it, to find the
// job on the tenant's shard (a job id is unique per shard only); on one
// server it is a check.
func tenantFlag() cli.Flag {
	return &cli.StringFlag{Name: "tenant", Usage: "the job's `TENANT`: the job must be that tenant's (a chunks router needs it, to find the tenant's shard)"}
}

// parseJobRef is the command's job as typed: its one JOB argument and
// --tenant. The names are checked by the options' Validate (JobRef.Validate);
// only a --tenant typed empty is refused here, since a JobRef without a
// tenant means "any tenant": an empty one is never taken as that.
func parseJobRef(c *cli.Context) (driver.JobRef, error) {
	job, _, err := parseJobArgs(c)
	return job, err
}

// parseJobArgs is parseJobRef for a command that takes more arguments
// after JOB (chunks skip JOB KEY): the job, and those arguments.
func parseJobArgs(c *cli.Context, more ...param) (driver.JobRef, []string, error) {
	job := driver.JobRef{Tenant: c.String("tenant")}
	if c.IsSet("tenant") && job.Tenant == "" {
		return job, nil, driver.CheckTenant(job.Tenant)
	}
	args, err := positional(c, append([]param{jobParam}, more...)...)
	if err != nil {
		return job, nil, err
	}
	job.ID = args[0]
	return job, args[1:], nil
}

// jobOptions are the options of a command that takes only its job:
// chunks resume JOB.
type jobOptions struct {
	Job driver.JobRef
}

func parseJob(c *cli.Context) (*jobOptions, error) {
	job, err := parseJobRef(c)
	return &jobOptions{Job: job}, err
}

// Validate checks the job's names.
func (o *jobOptions) Validate() error { return o.Job.Validate() }

// requireFlags refuses a command line without every one of the named
// flags, naming the missing ones (exit 2). urfave/cli's own Required is not
// used: its error is not a usage error, and it prints the whole help first.
func requireFlags(c *cli.Context, names ...string) error {
	var missing []string
	for _, name := range names {
		if !c.IsSet(name) {
			missing = append(missing, "--"+name)
		}
	}
	if len(missing) > 0 {
		path := cmdPath(c)
		return usagef("%s needs %s (chunks %s --help)", path, strings.Join(missing, ", "), path)
	}
	return nil
}

// cmdPath is the command as typed after chunks: report, campaign status.
func cmdPath(c *cli.Context) string { return strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ") }
