package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

var ctx = context.Background()

// chunksIn runs "chunks --dsn D --schema S args..." in this process, on
// lab l (nil: no global flags), with stdin, and returns how it ended.
func chunksIn(t testing.TB, l *clitest.Lab, stdin string, args ...string) clitest.Result {
	t.Helper()
	if l != nil {
		args = append(l.Globals(), args...)
	}
	var out, errOut bytes.Buffer
	code := run(append([]string{"chunks"}, args...), strings.NewReader(stdin), &out, &errOut)
	return clitest.Result{Args: args, Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

// labDeps are the deps of a command that reaches lab l, with text output.
func labDeps(l *clitest.Lab) deps {
	return deps{dsn: l.ChunksDSN, schema: l.Name, access: driver.Operator, stderr: &bytes.Buffer{}, stdin: strings.NewReader("")}
}

// newJob registers job jobID of tenant with n pending orders 1..n
// (revision 1, qty 1), chunk size size, on lab l.
func newJob(t testing.TB, l *clitest.Lab, jobID, tenant string, n, size int) driver.Plan {
	t.Helper()
	l.Exec(t, `insert into orders (id, tenant, qty, state, revision)
		select i, $1, 1, 'pending', 1 from generate_series(1, $2::integer) as i`, tenant, n)
	plan := driver.Plan{JobID: jobID, Tenant: tenant, ChunkSize: size, AllowPartial: true}
	for i := 1; i <= n; i++ {
		plan.Targets = append(plan.Targets, driver.Target{ID: int64(i), Revision: 1, Qty: 1})
	}
	created, err := driver.Register(ctx, l.Conn, plan)
	if err != nil || !created {
		t.Fatalf("register %s: created %v, %v", jobID, created, err)
	}
	return plan
}

// wantRun fails unless run returned no error, and returns what it printed.
func wantRun[O options](t testing.TB, run runFunc[O], d deps, o O) string {
	t.Helper()
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate(%+v): %v", o, err)
	}
	var out bytes.Buffer
	if err := run(ctx, d, o, &out); err != nil {
		t.Fatalf("run(%+v): %v", o, err)
	}
	return out.String()
}

// wantInvalid fails unless o's Validate refuses it with a message holding
// every part.
func wantInvalid(t testing.TB, o options, parts ...string) {
	t.Helper()
	err := o.Validate()
	if err == nil {
		t.Fatalf("Validate(%+v): want an error holding %q, got none", o, parts)
	}
	if !clitest.ContainsAll(err.Error(), parts...) {
		t.Fatalf("Validate(%+v): want an error holding %q, got %v", o, parts, err)
	}
}

// wantExit fails unless r exited with code, its stderr one line holding
// every part, and nothing on stdout.
func wantExit(t testing.TB, r clitest.Result, code int, parts ...string) {
	t.Helper()
	if r.Code != code || r.Stdout != "" || strings.Count(r.Stderr, "\n") != 1 || !clitest.ContainsAll(r.Stderr, parts...) {
		t.Fatalf("want exit %d and one stderr line holding %q, got %v", code, parts, r)
	}
}

// wantOut fails unless r exited 0 with stdout want and nothing on stderr.
func wantOut(t testing.TB, r clitest.Result, want string) {
	t.Helper()
	if r.Code != 0 || r.Stderr != "" || r.Stdout != want {
		t.Fatalf("want exit 0 and stdout %q, got %v", want, r)
	}
}

func ptr[T any](v T) *T { return &v }

// parsed runs the command line "chunks args..." through parse and returns
// the options it filled, without running the command. A subcommand is
// found by its path: "campaign", "create", ....
func parsed[O options](t testing.TB, parse func(*cli.Context) (O, error), args ...string) O {
	t.Helper()
	app := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	var cmd *cli.Command
	for cmds, i := app.Commands, 0; i < len(args); i++ {
		next := findCommand(cmds, args[i])
		if next == nil {
			break
		}
		cmd, cmds = next, next.Subcommands
	}
	if cmd == nil {
		t.Fatalf("no command %s", args[0])
	}
	var got O
	cmd.Action = func(c *cli.Context) (err error) {
		got, err = parse(c)
		return err
	}
	if err := app.Run(append([]string{"chunks"}, args...)); err != nil {
		t.Fatalf("chunks %q: %v", args, err)
	}
	return got
}

// findCommand is the command of cmds named name, or nil.
func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, cmd := range cmds {
		if cmd.HasName(name) {
			return cmd
		}
	}
	return nil
}

// failingWriter fails every write, as a closed stdout does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestFailedWriteFailsTheCommand(t *testing.T) {
	var errOut bytes.Buffer
	items := `[{"id": 1, "revision": 1, "qty": 1}]`
	code := run([]string{"chunks", "manifest", "--job-id", "j1", "--tenant", "acme", "--chunk-size", "1", "--allow-partial", "-"},
		strings.NewReader(items), failingWriter{}, &errOut)
	if want := "chunks: writing the result: broken pipe\n"; code != 1 || errOut.String() != want {
		t.Fatalf("want exit 1 and %q, got %d and %q", want, code, errOut.String())
	}
}
