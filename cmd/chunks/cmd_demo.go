package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/childenv"
	"github.com/chunks-dev/chunks/internal/localpg"
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:      "demo",
		Usage:     "the whole story end to end, on a throwaway local Postgres unless --dsn is typed",
		UsageText: "chunks demo [--keep]\n   chunks demo --dsn DSN [--schema S]",
		Description: "Installs chunks into a new schema, creates the 40 orders of the Alien Desert Festival and\n" +
			"some of other tenants, registers the cancellation 10 at a time, runs a chunk, kills a second\n" +
			"run with SIGKILL in the middle of its chunk, drains the rest with two worker processes at\n" +
			"once, and reports; then changes and deletes committed orders and reports the drift; at last\n" +
			"it undoes the job (the orders still as it left them are pending again) and reports the undo.\n" +
			"Without --dsn it starts a throwaway server (the PostgreSQL server binaries must be\n" +
			"installed), not durable for speed, and removes it at the end; --keep keeps it, durable\n" +
			"(Postgres' defaults), and says how to restart it as a crash would. Only a --dsn typed on\n" +
			"this command line makes it use a database of yours ($CHUNKS_DSN and $DATABASE_URL are\n" +
			"ignored): then it works in a new schema (festival_demo_<random>, or --schema), leaves it\n" +
			"there and says so; --keep is a usage error then.\n\n" +
			"Example:\n  chunks demo\n  chunks demo --dsn 'postgres://me@localhost/scratch'",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "keep", Usage: "leave the throwaway server running, durable, and say how to connect and crash-restart it (not with --dsn)"},
		},
		Action: action(parseDemo, runDemo),
	}
}

// demoOptions is chunks demo [--keep], or chunks demo --dsn DSN [--schema S].
type demoOptions struct {
	Keep bool // --keep: leave the throwaway server running, durable
	// DSN is a --dsn typed on this command line: only that makes the demo
	// use a database of yours ($CHUNKS_DSN and $DATABASE_URL are ignored);
	// without it (OnDSN false) it starts a throwaway server.
	DSN   string
	OnDSN bool
	// Schema is a --schema typed on this command line ($CHUNKS_SCHEMA names
	// an installation of yours, not a demo); "" is festival_demo, or
	// festival_demo_<random> on a database of yours.
	Schema string
}

// parseDemo fills --keep, and a --dsn and --schema typed here; it takes
// no arguments.
func parseDemo(c *cli.Context) (*demoOptions, error) {
	o := &demoOptions{Keep: c.Bool("keep")}
	o.DSN, o.OnDSN = typed(c, "dsn")
	o.Schema, _ = typed(c, "schema")
	_, err := positional(c)
	return o, err
}

// Validate refuses --keep with --dsn, and checks the schema.
func (o *demoOptions) Validate() error {
	if o.OnDSN && o.Keep {
		return usagef("demo --keep keeps the throwaway server, and with --dsn there is none: give one or the other")
	}
	if o.Schema != "" {
		return driver.CheckSchema(o.Schema)
	}
	return nil
}

// runDemo tells the story, on a throwaway server unless --dsn was typed,
// to out (its child processes' stderr to d.stderr), and says how to look
// at what it left.
func runDemo(ctx context.Context, d deps, o *demoOptions, out io.Writer) (err error) {
	base, schema := o.DSN, o.Schema
	var server *localpg.Server
	if !o.OnDSN {
		step(out, "Starting a throwaway PostgreSQL server")
		// A kept server is for the guides' experiments, crash drills
		// included: Postgres' default durability. One removed at the
		// end crashes no server: fast settings.
		server, err = localpg.Start(ctx, localpg.Options{Detach: o.Keep, Durable: o.Keep})
		if err != nil {
			return err
		}
		base = server.DSN()
		note(out, "%s, data in %s", server, server.Dir)
		if o.Keep {
			note(out, "durable (fsync, synchronous_commit and full_page_writes on, Postgres' defaults): it is kept")
		} else {
			note(out, "not durable (fsync, synchronous_commit and full_page_writes off, for speed): it is removed at the end")
			defer func() { err = errors.Join(err, server.Stop()) }()
		}
	}
	if schema == "" {
		schema = "festival_demo"
		if server == nil {
			schema = "festival_demo_" + randomSuffix()
		}
	}
	cfg, err := driver.ParseDSN(base)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	story := &demo{ctx: ctx, base: base, admin: cfg, schema: schema, out: out, stderr: d.stderr, self: self}
	if err := story.run(); err != nil {
		return err
	}
	say(out, "")
	look := func(psql string) {
		say(out, "Look at the data yourself:")
		say(out, "  %s -c 'select * from %s.job_audit order by ordinal'", psql, schema)
	}
	switch {
	case server != nil && o.Keep:
		say(out, "The server keeps running (pid %d).", server.PID())
		look(fmt.Sprintf("psql %q", base)) // the throwaway server's DSN holds no password
		say(out, "See it on the status page (then open http://127.0.0.1:8080/):")
		say(out, "  chunks serve --dsn %q --schema %s --http 127.0.0.1:8080", base, schema)
		return printKept(out, server, base)
	case server != nil:
		say(out, "The throwaway server is stopped and removed now, with its data.")
		say(out, "To look at the data yourself, run chunks demo --keep: it leaves the server running and says how to connect.")
	default:
		say(out, "The schema %s stays in your database.", schema)
		look(psqlCommand(cfg)) // your DSN may hold a password: never printed
		if cfg.Password != "" {
			say(out, "  (psql asks for the password, or reads $PGPASSWORD: it is not printed here)")
		}
		say(out, "Drop it with: drop schema %s cascade", schema)
	}
	return nil
}

// printKept says how to crash-restart the kept server, how to stop it and
// how to point chunks at it.
func printKept(out io.Writer, server *localpg.Server, base string) error {
	user, err := server.OSUser()
	if err != nil {
		return err
	}
	crash, err := server.CrashCommand()
	if err != nil {
		return err
	}
	stop, err := server.StopCommand()
	if err != nil {
		return err
	}
	say(out, "Crash drill: restart it as a crash would (immediate shutdown, then crash recovery), as the OS user %s,\n"+
		"on its data directory %s:\n  %s", user, server.DataDir(), crash)
	say(out, "Its new pid is then the first line of %s.", filepath.Join(server.DataDir(), "postmaster.pid"))
	say(out, "Stop it and remove its data with:\n  %s", stop)
	say(out, "To point chunks at it:\n  export CHUNKS_DSN=%s", localpg.ShellWord(base))
	return nil
}

// psqlCommand is a psql command line for cfg's server, user and database,
// without its password.
func psqlCommand(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("psql -h %s -p %d -U %s -d %s", localpg.ShellWord(cfg.Host), cfg.Port, localpg.ShellWord(cfg.User), localpg.ShellWord(cfg.Database))
}

// demo is one telling of the story, on base (a DSN, parsed as admin) in
// schema, told to out. Its child processes are self (this binary); their
// stderr goes to stderr.
type demo struct {
	ctx    context.Context
	base   string
	admin  *pgx.ConnConfig
	schema string
	conn   *pgx.Conn
	out    io.Writer
	stderr io.Writer
	self   string
}

const (
	demoJob    = "alien-desert-festival"
	demoTenant = "alien-desert"
)

// cfg is the connection of the demo's sessions: search_path = its schema.
func (d *demo) cfg() *pgx.ConnConfig {
	cfg := d.admin.Copy()
	cfg.RuntimeParams["search_path"] = d.schema
	return cfg
}

func (d *demo) run() (err error) {
	d.step("Installing chunks into schema %s", d.schema)
	admin, err := pgx.ConnectConfig(d.ctx, d.admin)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, admin.Close(context.WithoutCancel(d.ctx))) }()
	var exists bool
	if err := admin.QueryRow(d.ctx, "select to_regnamespace($1) is not null", d.schema).Scan(&exists); err != nil {
		return err
	}
	if exists { // the demo inserts orders: never into a schema of yours
		return driver.NewError(driver.ErrConflict, nil, "schema %s: already exists; the demo works in a new schema only", d.schema)
	}
	if err := driver.Migrate(d.ctx, admin, d.schema, driver.MigrateOptions{}); err != nil {
		return err
	}
	if d.conn, err = pgx.ConnectConfig(d.ctx, d.cfg()); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, d.conn.Close(context.WithoutCancel(d.ctx))) }()

	d.step("Creating 40 pending festival orders (1001-1040), and 12 orders of other tenants")
	if err := d.exec(`insert into orders (id, tenant, qty, state, revision)
		select 1000 + g, $1, 1 + g % 4, 'pending', g % 3 from generate_series(1, 40) g
		union all select 2000 + g, 'lunar-bazaar', 2, 'pending', 0 from generate_series(1, 8) g
		union all select 3000 + g, 'comet-fair', 5, 'paid', 1 from generate_series(1, 4) g`, demoTenant); err != nil {
		return err
	}
	var items []driver.Target
	rows, err := d.conn.Query(d.ctx, "select id, revision, qty from orders where tenant = $1 order by id desc", demoTenant)
	if err != nil {
		return err
	}
	if items, err = pgx.CollectRows(rows, pgx.RowToStructByPos[driver.Target]); err != nil {
		return err
	}

	d.step("Registering the approved cancellation: 40 orders, 10 per chunk, partial completion allowed")
	plan, err := driver.Manifest(demoJob, demoTenant, items, 10, true)
	if err != nil {
		return err
	}
	created, err := driver.Register(d.ctx, d.conn, plan)
	if err != nil {
		return err
	}
	d.note("register returned %t: the approval is frozen, targets sorted by id, next_index 0", created)
	if again, err := driver.Register(d.ctx, d.conn, plan); err != nil || again {
		return errors.Join(err, fmt.Errorf("registering the same plan again returned %t", again))
	}
	d.note("registering the same plan again returns false and changes nothing")

	d.step("Running one chunk")
	res, err := driver.ChunkFileConfig(d.ctx, d.cfg(), driver.JobRef{ID: demoJob}, nil)
	if err != nil {
		return err
	}
	d.note("cancelled %s in one transaction; next_index %d", ids(res.Processed), res.NextIndex)

	d.step("Running the second chunk in a child process that is killed (SIGKILL) after writing its audit rows")
	cmd := d.child("run", "--crash-at", driver.AfterAudit, demoJob)
	out, runErr := cmd.CombinedOutput()
	status, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !status.Signaled() || status.Signal() != syscall.SIGKILL {
		return fmt.Errorf("the crash drill did not die by SIGKILL: %v\n%s", runErr, out)
	}
	d.note("%s", terminalSafe(strings.TrimSpace(string(out))))
	d.note("the child (pid %d) died by SIGKILL: its connection dropped in the middle of the chunk", cmd.ProcessState.Pid())
	var next, audit, cancelled int
	if err := d.conn.QueryRow(d.ctx, `select next_index, (select count(*) from job_audit),
		(select count(*) from orders where tenant = $2 and state = 'cancelled') from jobs where job_id = $1`,
		demoJob, demoTenant).Scan(&next, &audit, &cancelled); err != nil {
		return err
	}
	d.note("nothing of its chunk is visible: next_index %d, %d audit rows, %d orders cancelled", next, audit, cancelled)

	d.step("Draining the rest with two worker processes at once")
	results, err := d.drainTwo()
	if err != nil {
		return err
	}
	for i, r := range results {
		d.note("worker %c: %d calls, cancelled %s", 'A'+i, r.Calls, ids(r.Processed))
	}

	d.step("The report: every committed order as the job left it")
	if err := d.report(demoJob); err != nil {
		return err
	}

	d.step("Meanwhile, life goes on: order 1003 gets its qty changed, 1017 is re-opened, 1025 is deleted")
	if err := d.exec(`update orders set qty = qty + 1, revision = revision + 1 where id = 1003;
		update orders set state = 'pending', revision = revision + 1 where id = 1017;
		delete from orders where id = 1025`); err != nil {
		return err
	}
	if err := d.report(demoJob); err != nil {
		return err
	}
	return d.undo()
}

// undo ends the story: the festival is back on, so its cancellation is
// undone, exactly, from what the job left.
func (d *demo) undo() error {
	d.step("The festival is back on: undoing the job (chunks undo %s)", demoJob)
	u, err := driver.JobRef{ID: demoJob}.RegisterUndo(d.ctx, d.conn, "")
	if err != nil {
		return err
	}
	d.note("registered job %s: it restores the %s still as the job left them", u.JobID, plural(len(u.Targets), "order"))
	d.note("left alone, since they changed after the job: drifted %s; missing %s", keyList(u.Drifted), keyList(u.Missing))

	d.step("Draining the undo like any other job")
	cmd := d.child("drain", "--json", u.JobID)
	cmd.Stderr = d.stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("drain %s: %w", u.JobID, err)
	}
	var res driver.DrainResult
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("drain %s: %w", u.JobID, err)
	}
	d.note("%d calls restored %s to pending, revision + 1, with one audit row each", res.Calls, plural(len(res.Processed), "order"))

	d.step("The report of the undo: every restored order as the undo left it")
	if err := d.report(u.JobID); err != nil {
		return err
	}
	var pending int
	if err := d.conn.QueryRow(d.ctx, "select count(*) from orders where tenant = $1 and state = 'pending'",
		demoTenant).Scan(&pending); err != nil {
		return err
	}
	d.note("%d festival orders are pending again: %d restored by the undo, %d re-opened by hand before it",
		pending, len(res.Processed), pending-len(res.Processed))
	lineage, err := driver.JobRef{ID: demoJob}.Lineage(d.ctx, d.conn)
	if err != nil {
		return err
	}
	if lineage == nil || lineage.UndoneBy == nil {
		return fmt.Errorf("job %s: its lineage does not name its undo: %+v", demoJob, lineage)
	}
	r, err := driver.Report(d.ctx, d.conn, demoJob)
	if err != nil {
		return err
	}
	d.note("the job %s now reports %d matching and %d drifted orders, and was undone by %s",
		demoJob, len(r.Matching), len(r.Drifted), *lineage.UndoneBy)
	return nil
}

func (d *demo) exec(sql string, args ...any) error {
	_, err := d.conn.Exec(d.ctx, sql, args...)
	return err
}

func (d *demo) report(jobID string) error {
	r, err := driver.Report(d.ctx, d.conn, jobID)
	if err != nil {
		return err
	}
	var drift []string
	for _, l := range []struct {
		name string
		ids  []int64
	}{{"drifted", r.Drifted}, {"missing", r.Missing}} {
		if len(l.ids) > 0 {
			drift = append(drift, l.name+": "+ids(l.ids))
		}
	}
	d.note("matching: %s", ids(r.Matching))
	if len(drift) > 0 {
		d.note("%s", strings.Join(drift, "; "))
	}
	d.note("%d approved, %d committed, %d remaining: %d matching, %d drifted, %d missing",
		len(r.Approved), len(r.Committed), len(r.Remaining), len(r.Matching), len(r.Drifted), len(r.Missing))
	return nil
}

// child is this binary, run as a separate process on the demo's schema. It
// gets the connection string through its environment, never its argv,
// which anyone on the machine can read (ps).
func (d *demo) child(args ...string) *exec.Cmd {
	cmd := exec.CommandContext(d.ctx, d.self, args...)
	cmd.Env = childenv.Env(d.base, d.schema)
	return cmd
}

// drainTwo starts two chunks drain processes at the same moment.
func (d *demo) drainTwo() ([]driver.DrainResult, error) {
	cmds := []*exec.Cmd{d.child("drain", "--json", demoJob), d.child("drain", "--json", demoJob)}
	outs := make([]bytes.Buffer, len(cmds))
	for i, cmd := range cmds {
		cmd.Stdout, cmd.Stderr = &outs[i], d.stderr
		if err := cmd.Start(); err != nil {
			return nil, err
		}
	}
	results := make([]driver.DrainResult, len(cmds))
	var errs []error
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("worker %c: %w", 'A'+i, err))
			continue
		}
		if err := json.Unmarshal(outs[i].Bytes(), &results[i]); err != nil {
			errs = append(errs, fmt.Errorf("worker %c: %w", 'A'+i, err))
		}
	}
	return results, errors.Join(errs...)
}

// step tells the next step of the story.
func (d *demo) step(format string, args ...any) { step(d.out, format, args...) }

// note tells what the step did.
func (d *demo) note(format string, args ...any) { note(d.out, format, args...) }

// step prints a step of the story to out.
func step(out io.Writer, format string, args ...any) {
	say(out, "\n▸ "+format, args...)
}

// note prints what a step did to out.
func note(out io.Writer, format string, args ...any) {
	say(out, "  "+format, args...)
}

func randomSuffix() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return time.Now().Format("20060102150405")
	}
	return hex.EncodeToString(b[:])
}
