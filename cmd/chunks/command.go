package main

import (
	"context"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

// Every command has the same three parts, as River's rivercli does:
//
//   - an options struct, the command line as typed (its arguments and
//     flags), with a Validate method that checks it before anything
//     connects or writes;
//   - a run function, run<Command>(ctx, deps, opts, out), which holds the
//     logic and writes its results to out and nothing else;
//   - the urfave/cli wiring, which only fills the options (action).
//
// The in-process tests (cmd/chunks/*_test.go) build options and deps and
// call run with a buffer; the subprocess tests (tests/cli, tests/fleet) keep
// what needs a process: signals, crashes and exit codes.

// options is a command's parsed command line.
type options interface {
	// Validate checks the options before anything connects, naming the
	// field at fault: a usage error (usagef) or a driver.Invalidf error.
	Validate() error
}

// runFunc is a command's logic, on its validated options.
type runFunc[O options] func(ctx context.Context, d deps, o O, out io.Writer) error

// deps is what a command's run takes from outside its own options: the
// global flags (where the database is, JSON or text) and the process's
// other streams. The command line fills it (depsOf); a test builds its own.
type deps struct {
	access driver.Access // what the command needs of the schema, to explain a function that looks missing
	dsn    string        // the connection string: --dsn, else $CHUNKS_DSN, else $DATABASE_URL; "" uses the libpq PG* variables
	schema string        // the schema chunks is installed in: --schema, else $CHUNKS_SCHEMA; "" leaves search_path alone
	json   bool          // --json: print the driver's structs as JSON
	stderr io.Writer
	stdin  io.Reader
}

// depsOf is the deps of the command line c.
func depsOf(c *cli.Context) deps {
	return deps{
		access: commandAccess(c),
		dsn:    global(c, "dsn"),
		schema: global(c, "schema"),
		json:   global(c, "json") == "true",
		stderr: c.App.ErrWriter,
		stdin:  c.App.Reader,
	}
}

// action is a command's urfave/cli action: parse fills the options from the
// command line (and does nothing else), Validate checks them, and run does
// the work, writing to the app's Writer; a failed write fails the command.
func action[O options](parse func(c *cli.Context) (O, error), run runFunc[O]) cli.ActionFunc {
	return func(c *cli.Context) error {
		o, err := parse(c)
		if err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		out := &resultWriter{w: c.App.Writer}
		if err := run(c.Context, depsOf(c), o, out); err != nil {
			return err
		}
		return out.err

	}
}
