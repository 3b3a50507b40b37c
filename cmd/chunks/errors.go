package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
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
// A flag's bad value (Go's "invalid value "010" for flag -after: why")
// says --after 010: why, the value bounded and the reason whole.
func onUsageError(_ *cli.Context, err error, _ bool) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if i := strings.LastIndex(rest, " for flag -"); i >= 0 {
			name, reason, _ := strings.Cut(rest[i+len(" for flag -"):], ": ")
			if value, qerr := strconv.Unquote(rest[:i]); qerr == nil {
				return usagef("--%s %s: %s", driver.Excerpt(name, false), driver.Excerpt(value, true), driver.Excerpt(reason, false))
			}
		}
	}
	return usageError{driver.Excerpt(msg, false)}
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
// was not granted access (docs/roles.md), the server went away mid-call, a
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
