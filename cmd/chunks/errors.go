package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

// usageError is a command line that cannot be run as typed (exit 2).
type usageError struct{ msg string }

// Error says what was wrong with the command line.
func (e usageError) Error() string { return "usage: " + e.msg }

func usagef(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// onUsageError is urfave/cli's own refusal of a command line ("flag
// provided but not defined: -x"), bounded: the line echoes what was typed.
func onUsageError(_ *cli.Context, err error, _ bool) error {
	return usageError{driver.Excerpt(err.Error(), false)}
}

func exitCode(err error) int {
	var usage usageError
	var cliExit cli.ExitCoder // urfave/cli's own: "No help topic for 'frobnicate'", an unknown command
	var interrupted *interruptedError
	switch {
	case errors.As(err, &interrupted):
		return 128 + int(interrupted.signal) // 130 for SIGINT, 143 for SIGTERM
	case errors.Is(err, driver.ErrConflict):
		return 3
	case errors.Is(err, driver.ErrInvalid), errors.As(err, &usage), errors.As(err, &cliExit):
		return 2
	}
	return 1
}

// hint says what to do about an error whose cause is usually the set-up
// or the server: the chunks functions are not on the search_path, the role
// was not granted access (README "Roles"), the server went away mid-call, a
// job command went to a router without --tenant (a router's job functions
// take the tenant), or a campaign command went to a router (campaigns run
// on a shard itself).
func hint(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == pgerrcode.UndefinedFunction || pgErr.Code == pgerrcode.UndefinedTable) {
		return " (is chunks installed in the schema given by --schema or $CHUNKS_SCHEMA? install it with chunks migrate --schema SCHEMA;" +
			" through a chunks router, the job commands need --tenant, and campaign commands need the tenant's shard itself)"
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return " (the server closed the connection: it crashed, restarted or failed over, or ended this session; a chunk in flight" +
			" either committed or rolled back whole: run the command again to go on after the last committed chunk)"
	}
	if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.InsufficientPrivilege {
		return " (this role has no chunks access for that: the schema's owner grants it with chunks grant --operator ROLE, or --viewer ROLE to read)"
	}
	return ""
}

// oneLine keeps an error message on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}

// argList shows a command line's arguments in an error, bounded.
func argList(args []string) string { return driver.Excerpt(fmt.Sprintf("%q", args), false) }

// fileArg returns the one positional file argument (- for stdin), refusing
// a flag typed after it as jobArg does.
func fileArg(c *cli.Context, what string) (string, error) {
	args := c.Args().Slice()
	for _, a := range args[min(1, len(args)):] {
		if strings.HasPrefix(a, "-") {
			return "", usagef("flag %s after %s: put flags before it (chunks %s [flags] %s)", driver.Excerpt(a, false), what, c.Command.Name, what)
		}
	}
	if len(args) != 1 {
		return "", usagef("%s takes one %s argument (- for stdin)", c.Command.Name, what)
	}
	return args[0], nil
}

// jobArg returns the one positional JOB argument, a valid job id. A flag
// typed after it would be ignored by the flag parser, so it is refused
// instead.
func jobArg(c *cli.Context) (string, error) {
	args := c.Args().Slice()
	if len(args) == 0 {
		return "", usagef("%s needs a JOB argument (chunks %s --help)", c.Command.Name, c.Command.Name)
	}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			return "", usagef("flag %s after the job id: put flags before the job id (chunks %s [flags] JOB)", driver.Excerpt(a, false), c.Command.Name)
		}
	}
	if len(args) > 1 {
		return "", usagef("%s takes one JOB argument, got %d: %s", c.Command.Name, len(args), driver.Excerpt(strings.Join(args, " "), false))
	}
	if err := driver.CheckJobID(args[0]); err != nil {
		return "", err // before any connection
	}
	return args[0], nil
}
