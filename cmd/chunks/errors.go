package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	chunkssql "github.com/chunks-dev/chunks/sql"
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
	var owner *driver.OwnerError
	if errors.As(err, &owner) {
		return "" // it says who may, and that no grant helps
	}
	if errors.As(err, &pgErr) && chunksMissing(pgErr) {
		return " (is chunks installed in the schema given by --schema or $CHUNKS_SCHEMA? install it with chunks migrate --schema SCHEMA;" +
			" through a chunks router, the job commands need --tenant, and campaign commands need the tenant's shard itself)"
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return " (the server closed the connection: it crashed, restarted or failed over, or ended this session; a chunk in flight" +
			" either committed or rolled back whole: run the command again to go on after the last committed chunk)"
	}
	if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.InsufficientPrivilege {
		switch pgErr.Message {
		case "permission denied for function approve", "permission denied for function campaign_approve":
			return " (approving needs the approver access: the schema's owner grants it with chunks grant --approver ROLE; never to the proposer's own plans)"
		case "permission denied for function set_policy":
			return " (only the schema's owner sets the approval policy)"
		}
		return " (this role has no chunks access for that: the schema's owner grants it with chunks grant --operator ROLE, or --viewer ROLE to read)"
	}
	return ""
}

// chunksMissing is whether pgErr says that one of chunks' own functions
// or tables does not exist (42883, 42P01), as when chunks is not installed
// in the schema: not an operator, a function or a relation of the user's
// own SQL (a campaign's --from-query).
func chunksMissing(pgErr *pgconn.PgError) bool {
	var m []string
	switch pgErr.Code {
	case pgerrcode.UndefinedFunction:
		m = missingFunction.FindStringSubmatch(pgErr.Message)
	case pgerrcode.UndefinedTable:
		m = missingRelation.FindStringSubmatch(pgErr.Message)
	}
	return m != nil && chunksObjects()[m[1]]
}

// missingFunction and missingRelation read the name out of the server's
// messages for a function and a relation that do not exist, when it is
// not qualified by a schema: chunks calls its functions, and they name its
// tables, unqualified (the search_path is the schema); a name with a schema
// (shop.jobs, say, of a declared change) is the user's.
var (
	missingFunction = regexp.MustCompile(`^function ([a-z0-9_]+)\(.*\) does not exist$`)
	missingRelation = regexp.MustCompile(`^relation "([a-z0-9_]+)" does not exist$`)
)

// chunksObjects are the names of chunks' functions and tables, read once
// from the SQL this binary installs (chunks migrate).
var chunksObjects = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	created := regexp.MustCompile(`(?m)^create (?:or replace function|table if not exists) \{\{ \.schema \}\}\.([a-z0-9_]+)\(`)
	for _, fsys := range []fs.FS{chunkssql.Functions(), chunkssql.Migrations()} {
		err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			text, err := fs.ReadFile(fsys, name)
			for _, m := range created.FindAllSubmatch(text, -1) {
				names[string(m[1])] = true
			}
			return err
		})
		if err != nil {
			panic(err) // embedded: every file is there
		}
	}
	return names
})

// oneLine keeps an error message on one line. A failed connection says
// each attempt's error once: pgx joins the errors of every attempt, and
// libpq's default sslmode (prefer) makes two attempts at one address that
// fail alike ("connection refused" twice).
func oneLine(err error) string {
	text := err.Error()
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		text = strings.Replace(text, connectErr.Error(), connectText(connectErr), 1)
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(text, "\n", " ")), " ")
}

// connectText is a connection error with each attempt's error once.
func connectText(err *pgconn.ConnectError) string {
	whole := err.Error()
	joined, ok := err.Unwrap().(interface{ Unwrap() []error })
	if !ok {
		return whole
	}
	var attempts []string
	for _, e := range joined.Unwrap() {
		if !slices.Contains(attempts, e.Error()) {
			attempts = append(attempts, e.Error())
		}
	}
	prefix := fmt.Sprintf("failed to connect to `user=%s database=%s`:", err.Config.User, err.Config.Database) // as pgx words it
	if !strings.HasPrefix(whole, prefix) {
		return whole
	}
	return prefix + " " + strings.Join(attempts, "; ")
}
