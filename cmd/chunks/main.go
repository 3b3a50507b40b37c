// Command chunks applies an approved bulk change (cancel these orders) in
// small chunks that each commit on their own, on PostgreSQL.
//
// Run "chunks demo" for the whole story on a throwaway local Postgres, and
// "chunks help" for the commands.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

// docs/cli.md and docs/chunks.1 are made from the command definitions:
//go:generate go test -run TestGeneratedDocs -update .

func main() {
	os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// run runs the command line and maps its outcome to an exit status, in this
// one place: 0 done, 1 runtime error, 2 invalid input or usage, 3 conflict,
// 128 + the signal's number for a drain a signal stopped. Results go to
// stdout, errors and progress to stderr.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := newApp(stdin, stdout, stderr).Run(args)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "chunks:", terminalSafe(oneLine(err)+hint(err))) // server messages quote database values
	return exitCode(err)
}

// newApp is the command line, reading stdin and writing stdout and stderr.
func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		Name:      "chunks",
		Usage:     "apply an approved bulk change in small chunks that each commit on their own",
		Description: "Register an approved plan (cancel these orders), then run it chunk by chunk: each chunk\n" +
			"is one transaction; a client that dies resumes after the last committed chunk; workers on\n" +
			"one job change every order exactly once; the report shows what drifted since.\n\n" +
			"Flags go before the job id. The global flags work before or after the command name.\n" +
			"Exit status: 0 done, 1 runtime error, 2 invalid input or usage, 3 conflict.",
		Version: readBuildVersion().Version,
		Flags:   globalFlags(),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("unknown command %s (chunks help lists the commands)", driver.Excerpt(c.Args().First(), true))
			}
			return cli.ShowAppHelp(c)
		},
		Commands:             commands(),
		HideHelpCommand:      false,
		ExitErrHandler:       func(*cli.Context, error) {}, // exit codes are mapped in run
		OnUsageError:         onUsageError,
		EnableBashCompletion: true, // chunks completion's bash and zsh scripts ask --generate-bash-completion
		// A --shard connection string may hold commas (host=a,b): never split it.
		DisableSliceFlagSeparator: true,
	}
	addGlobalFlags(app.Commands)
	decimalFlags(app.Commands)
	return app
}

// offlineCommands need no database: they take --json of the global flags
// only.
var offlineCommands = []string{"manifest", "version", "completion"}

// addGlobalFlags gives every command and subcommand the global flags, so
// that they work after the command name too.
func addGlobalFlags(cmds []*cli.Command) {
	for _, cmd := range cmds {
		for _, f := range globalFlags() {
			if slices.Contains(offlineCommands, cmd.Name) && f.Names()[0] != "json" {
				continue // no database: no --dsn, no --schema
			}
			cmd.Flags = append(cmd.Flags, f)
		}
		cmd.OnUsageError = onUsageError
		addGlobalFlags(cmd.Subcommands)
	}
}

func commands() []*cli.Command {
	return []*cli.Command{
		migrateCommand(),
		grantCommand(),
		manifestCommand(),
		checkCommand(),
		registerCommand(),
		inspectCommand(),
		runCommand(),
		drainCommand(),
		reportCommand(),
		verifyCommand(),
		workerCommand(),
		statusCommand(),
		serveCommand(),
		pauseCommand(),
		resumeCommand(),
		abandonCommand(),
		skipCommand(),
		policyCommand(),
		planCommand(),
		approveCommand(),
		verifyApprovalCommand(),
		archiveCommand(),
		undoCommand(),
		campaignCommand(),
		changeCommand(),
		demoCommand(),
		benchCommand(),
		routerCommand(),
		versionCommand(),
		completionCommand(),
	}
}
