package cli

import (
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
	"github.com/chunks-dev/chunks/router"
)

// TestHelpExamples runs every example of every command's --help, found by
// walking the commands that chunks --help and each command's --help list,
// as a shell runs it: bash -e -o pipefail, the chunks under test first on
// PATH, each line in turn. An example that does not work as written fails
// the test. It runs on a server of its own, and each command's examples
// start from the same fresh world, the one the examples speak of:
//
//   - schema lab in the server's database ($CHUNKS_DSN): 40 pending orders
//     1-40 of tenant alien-desert, job festival-2026 registered over them 10
//     per chunk with its first chunk committed; plan.json is that plan,
//     items.json its targets and targets.jsonl (JSON Lines) the targets of
//     orders 41-50, pending too, in the working directory;
//   - schema shop with the user's table shop.payments (payments 1-4 of
//     merchant 42, captured, lock_version 0), the declared change
//     hold_payment on it (hold_payment.json, docs/your-own-tables.md)
//     defined in lab, and holds-1.json, a plan of a job of it over
//     payments 1 and 2, in the working directory;
//   - roles chunks_owner, alice, fleet, grafana and bob (who logs in);
//   - for verify-approval's examples only: the policy two people, job q4
//     (orders 41-50 of alien-desert) proposed by the test's superuser
//     and approved by bob with an SSH signature, and allowed_signers
//     listing bob's key, in the working directory;
//   - a router (database router, $ROUTER) over two shards (databases shard0
//     and shard1, $SHARD0 and $SHARD1), all in schema lab: job
//     spring-cleanup of tenant acme (orders 1-20, 5 per chunk) and
//     festival-2026 of alien-desert, each registered on its tenant's shard.
//     The router's own commands get $CHUNKS_DSN=$ROUTER.
//
// What the test changes in an example, no more: the connection strings an
// example spells out for its reader (exampleDSNs) become these databases';
// a loopback address gets a free port; the bench examples are run by
// TestBenchTypedDSNOnly and TestBenchSmoke instead (benchExamples), each
// a smoke run (--duration 100ms --scale=false). Every example exits 0, except
// run --crash-at, which SIGKILLs itself (137). The commands that run until
// a signal (worker, serve) get SIGTERM once they are up (a heartbeat row, a
// page that answers), and exit 0.
func TestHelpExamples(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("jq")
	pgtest.RequireTool(t, err, "jq (chunks status --help pipes to it)", "jq")
	_, err = exec.LookPath("bash")
	pgtest.RequireTool(t, err, "bash", "bash")

	blocks := helpExamples(t)
	for from := range exampleDSNs {
		if !slices.ContainsFunc(blocks, func(b exampleBlock) bool {
			return slices.ContainsFunc(b.lines, func(l string) bool { return strings.Contains(l, from) })
		}) {
			t.Errorf("no example spells out %s any more: drop it from exampleDSNs", from)
		}
	}
	w := newExampleWorld(t)
	for _, b := range blocks {
		t.Run(strings.ReplaceAll(b.command, " ", "_"), func(t *testing.T) {
			routed := strings.HasPrefix(b.command, "router")
			w.prepare(t, routed || slices.ContainsFunc(b.lines, func(l string) bool { return strings.Contains(l, "$ROUTER") }))
			if b.command == "verify-approval" {
				w.signedApproval(t)
			}
			for _, line := range b.lines {
				w.runExample(t, b.command, w.rewrite(t, line), routed)
			}
		})
	}
}

// exampleDSNs are the connection strings that examples spell out for their
// reader, and the variable of the world's database each one is run with.
var exampleDSNs = map[string]string{
	`'postgres://admin@localhost/shop'`:   `"$CHUNKS_DSN"`, // migrate
	`'postgres://me@localhost/scratch'`:   `"$CHUNKS_DSN"`, // demo --dsn
	`'postgres://me@db.internal/scratch'`: `"$CHUNKS_DSN"`, // bench --dsn
	`'host=db0 dbname=router'`:            `"$ROUTER"`,     // router install
	`'host=db1 dbname=shop'`:              `"$SHARD0"`,     // router install
	`'host=db2 dbname=shop'`:              `"$SHARD1"`,     // router install
}

// exampleBlock is the examples of one command's --help, one command line
// each (a line ending in \ goes on on the next).
type exampleBlock struct {
	command string // "drain", "campaign create"
	lines   []string
}

// helpExamples walks the commands of chunks --help, and the subcommands of
// each command's --help, and returns the examples of each; a command without
// subcommands and without an example fails the test.
func helpExamples(t *testing.T) []exampleBlock {
	t.Helper()
	var blocks []exampleBlock
	var walk func(path []string)
	walk = func(path []string) {
		out := wantOK(t, clitest.Run(t, append(path, "--help")...))
		subs := section(out, "COMMANDS:")
		if len(path) > 0 {
			if lines := examplesOf(out); len(lines) > 0 {
				blocks = append(blocks, exampleBlock{command: strings.Join(path, " "), lines: lines})
			} else if len(subs) == 0 {
				t.Errorf("chunks %s --help has no example (docs/cli-guide.md: every command's --help has one)", strings.Join(path, " "))
			}
		}
		for _, sub := range subs {
			if name := strings.TrimSuffix(strings.Fields(sub)[0], ","); name != "help" {
				walk(append(slices.Clone(path), name))
			}
		}
	}
	walk(nil)
	if len(blocks) < 20 {
		t.Fatalf("found the examples of %d commands only: %v", len(blocks), blocks)
	}
	return blocks
}

// section is the lines of a --help section (COMMANDS:) up to the next blank
// line, trimmed.
func section(help, title string) []string {
	var lines []string
	in := false
	for _, l := range strings.Split(help, "\n") {
		switch {
		case strings.TrimSpace(l) == title:
			in = true
		case in && strings.TrimSpace(l) == "":
			return lines
		case in:
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return lines
}

// examplesOf is the command lines after "Example:" in a --help, joined
// where a line ends in \.
func examplesOf(help string) []string {
	var lines []string
	for _, l := range section(help, "Example:") {
		if n := len(lines); n > 0 && strings.HasSuffix(lines[n-1], `\`) {
			lines[n-1] = strings.TrimSuffix(lines[n-1], `\`) + l
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// exampleWorld is the server the examples run on, and their directory.
type exampleWorld struct {
	srv *localpg.Server
	dir string
	env []string
}

func (w *exampleWorld) dsn(db string) string { return w.srv.DSN() + " dbname=" + db }

func newExampleWorld(t *testing.T) *exampleWorld {
	t.Helper()
	srv := ownServer(t)
	w := &exampleWorld{srv: srv, dir: t.TempDir()}
	admin := pgtest.Connect(t, srv.DSN())
	var plproxy bool
	if err := admin.QueryRow(ctx, "select exists (select from pg_available_extensions where name = 'plproxy')").Scan(&plproxy); err != nil {
		t.Fatal(err)
	}
	if !plproxy {
		pgtest.RequireTool(t, fmt.Errorf("no plproxy extension"), "plproxy (the router's examples)", "postgresql-15-plproxy")
	}
	for _, sql := range []string{"create role chunks_owner", "create role alice", "create role fleet", "create role grafana",
		"create role bob login password 'bob'",
		"create database router", "create database shard0", "create database shard1"} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	w.env = shellEnv("ROUTER="+w.dsn("router"), "SHARD0="+w.dsn("shard0"), "SHARD1="+w.dsn("shard1"))

	targets := func(from, to int) []driver.Target {
		var list []driver.Target
		for id := from; id <= to; id++ {
			list = append(list, driver.Target{ID: int64(id), Revision: 0, Qty: 1})
		}
		return list
	}
	plan, err := driver.Manifest("festival-2026", "alien-desert", targets(1, 40), 10, true)
	if err != nil {
		t.Fatal(err)
	}
	var jsonl []string
	for _, x := range targets(41, 50) {
		jsonl = append(jsonl, clitest.MustJSON(t, x))
	}
	for name, text := range map[string]string{"plan.json": clitest.MustJSON(t, plan), "items.json": clitest.MustJSON(t, plan.Targets),
		"targets.jsonl": strings.Join(jsonl, "\n") + "\n", "hold_payment.json": exampleHoldPayment, "holds-1.json": exampleHolds} {
		if err := os.WriteFile(filepath.Join(w.dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// signedApproval is verify-approval's world: job q4 proposed under the
// policy two people and approved by bob, signed with his SSH key, which
// allowed_signers lists.
func (w *exampleWorld) signedApproval(t *testing.T) {
	t.Helper()
	key := sshKey(t)
	signers := `bob namespaces="chunks" ` + key.authorized + "\n"
	if err := os.WriteFile(filepath.Join(w.dir, "allowed_signers"), []byte(signers), 0o600); err != nil {
		t.Fatal(err)
	}
	owner := pgtest.Connect(t, w.dsn("postgres")+" search_path=lab")
	targets := make([]driver.Target, 10)
	for i := range targets {
		targets[i] = driver.Target{ID: int64(41 + i), Revision: 0, Qty: 1}
	}
	plan, err := driver.Manifest("q4", "alien-desert", targets, 10, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { _, err := driver.SetPolicy(ctx, owner, "", true); return err },
		func() error { _, err := driver.Grant(ctx, owner, "bob", driver.Approver); return err },
		func() error { _, err := driver.Register(ctx, owner, plan); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	d, err := driver.DigestPlan(ctx, owner, plan)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := driver.SignDigest(pem.EncodeToMemory(key.block), d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	bob := pgtest.Connect(t, w.dsn("postgres")+" user=bob password=bob search_path=lab")
	if _, err := driver.Approve(ctx, bob, "q4", d.Digest, sig); err != nil {
		t.Fatal(err)
	}
}

// prepare makes the world afresh (see TestHelpExamples): schema lab in the
// server's database, and with routed the router and its shards too.
func (w *exampleWorld) prepare(t *testing.T, routed bool) {
	t.Helper()
	seed := func(db, tenant, jobID string, n, chunkSize, committed int) {
		t.Helper()
		err := pgtest.WithConn(w.dsn(db), func(conn *pgx.Conn) error {
			if _, err := conn.Exec(ctx, "insert into lab.orders (id, tenant, qty, state, revision) select g, $1, 1, 'pending', 0 from generate_series(1, $2) g",
				tenant, n); err != nil {
				return err
			}
			items := make([]driver.Target, n)
			for i := range items {
				items[i] = driver.Target{ID: int64(i + 1), Revision: 0, Qty: 1}
			}
			plan, err := driver.Manifest(jobID, tenant, items, chunkSize, true)
			if err != nil {
				return err
			}
			if _, err := conn.Exec(ctx, "set search_path = lab"); err != nil {
				return err
			}
			if _, err := driver.Register(ctx, conn, plan); err != nil {
				return err
			}
			for range committed {
				if _, err := driver.RunChunk(ctx, conn, jobID, nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("seed %s in %s: %v", jobID, db, err)
		}
	}
	fresh := func(db string) {
		t.Helper()
		err := pgtest.WithConn(w.dsn(db), func(conn *pgx.Conn) error {
			if db != "router" {
				return pgtest.Fresh(ctx, conn, "lab")
			}
			if _, err := conn.Exec(ctx, "drop schema if exists lab cascade"); err != nil {
				return err
			}
			_, err := conn.Exec(ctx, "drop server if exists "+router.Cluster("lab")+" cascade")
			return err
		})
		if err != nil {
			t.Fatalf("fresh lab in %s: %v", db, err)
		}
	}
	fresh("postgres")
	seed("postgres", "alien-desert", "festival-2026", 40, 10, 1)
	if _, err := pgtest.Connect(t, w.dsn("postgres")).Exec(ctx,
		"insert into lab.orders (id, tenant, qty, state, revision) select g, 'alien-desert', 1, 'pending', 0 from generate_series(41, 50) g"); err != nil {
		t.Fatal(err)
	}
	err := pgtest.WithConn(w.dsn("postgres"), func(conn *pgx.Conn) error {
		for _, sql := range []string{"drop schema if exists shop cascade", "create schema shop",
			`create table shop.payments(payment_id bigint primary key, merchant_id integer not null, status text not null,
			   amount_cents integer not null, hold_reason text, lock_version integer not null default 0)`,
			"insert into shop.payments select g, 42, 'captured', 100 * g, null, 0 from generate_series(1, 4) g",
			"grant usage on schema shop to lab_writer", "grant select, update on shop.payments to lab_writer"} {
			if _, err := conn.Exec(ctx, sql); err != nil {
				return err
			}
		}
		_, err := conn.Exec(ctx, "select lab.define_change($1)", exampleHoldPayment)
		return err
	})
	if err != nil {
		t.Fatalf("shop.payments and hold_payment: %v", err)
	}
	if !routed {
		return
	}
	for _, db := range []string{"router", "shard0", "shard1"} {
		fresh(db)
	}
	err = pgtest.WithConn(w.dsn("router"), func(conn *pgx.Conn) error {
		return router.Install(ctx, conn, router.Config{Schema: "lab", Shards: []string{w.dsn("shard0"), w.dsn("shard1")}})
	})
	if err != nil {
		t.Fatalf("router install: %v", err)
	}
	for _, job := range []struct {
		tenant, id string
		n, size    int
	}{{"acme", "spring-cleanup", 20, 5}, {"alien-desert", "festival-2026", 40, 10}} {
		var shard string
		if err := pgtest.WithConn(w.dsn("router"), func(conn *pgx.Conn) error {
			return conn.QueryRow(ctx, "select lab.shard_of($1)", job.tenant).Scan(&shard)
		}); err != nil {
			t.Fatalf("shard_of %s: %v", job.tenant, err)
		}
		seed("shard"+strings.TrimPrefix(shard, "p"), job.tenant, job.id, job.n, job.size, 0)
	}
}

// exampleHoldPayment is the examples' declared change (hold_payment.json),
// and exampleHolds a plan of a job of it (holds-1.json).
const (
	exampleHoldPayment = `{"name": "hold_payment", "table": "shop.payments", "key": "payment_id", "tenant": "merchant_id",
  "version": "lock_version", "expect": ["amount_cents"], "when": {"status": "captured"},
  "set": {"status": "on_hold"}, "set_from_target": {"hold_reason": "reason"}}`
	exampleHolds = `{"job_id": "holds-1", "tenant": "42", "chunk_size": 2, "allow_partial": true, "targets": [
  {"payment_id": 1, "lock_version": 0, "amount_cents": 100, "reason": "chargeback"},
  {"payment_id": 2, "lock_version": 0, "amount_cents": 200, "reason": "chargeback"}]}`
)

var loopbackAddr = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// rewrite is the example line as the test runs it (see TestHelpExamples).
func (w *exampleWorld) rewrite(t *testing.T, line string) string {
	t.Helper()
	for from, to := range exampleDSNs {
		line = strings.ReplaceAll(line, from, to)
	}
	if addr := loopbackAddr.FindString(line); addr != "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		free := l.Addr().String()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		line = strings.ReplaceAll(line, addr, free)
	}
	return line
}

// runExample runs one example line and fails the test unless it ends as
// documented.
func (w *exampleWorld) runExample(t *testing.T, command, line string, routed bool) {
	t.Helper()
	if command == "bench" {
		// A smoke bench costs most of a minute: the two bench tests run
		// these lines, made short (benchExamples), and this only checks
		// that the help still shows those two.
		if !slices.Contains(benchExamples, line) {
			t.Errorf("bench --help shows %q, which neither TestBenchTypedDSNOnly nor TestBenchSmoke runs (benchExamples)", line)
		}
		return
	}
	untilSignal := command == "worker" || command == "serve"
	script := line
	if untilSignal {
		script = "exec " + line // the signal goes to chunks itself
	}
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = w.dir
	db := "postgres"
	if routed {
		db = "router"
	}
	cmd.Env = append(slices.Clone(w.env), "CHUNKS_DSN="+w.dsn(db))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timeout := time.After(3 * time.Minute)
	if untilSignal {
		up := time.NewTicker(50 * time.Millisecond)
		defer up.Stop()
		for !w.isUp(t, command, line) {
			select {
			case err := <-done:
				t.Fatalf("%s: ended before it was up (%v):\n%s", line, err, out.String())
			case <-timeout:
				w.kill(t, cmd, done)
				t.Fatalf("%s: not up after 3 minutes:\n%s", line, out.String())
			case <-up.C:
			}
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	select {
	case err = <-done:
	case <-timeout:
		w.kill(t, cmd, done)
		t.Fatalf("%s: still running after 3 minutes:\n%s", line, out.String())
	}
	want := 0
	if strings.Contains(line, "--crash-at") {
		want = 128 + int(syscall.SIGKILL) // run --crash-at kills itself, as its help says
	}
	code := cmd.ProcessState.ExitCode()
	if status := cmd.ProcessState.Sys().(syscall.WaitStatus); status.Signaled() {
		code = 128 + int(status.Signal()) // as a shell reports it
	}
	if code != want {
		t.Fatalf("%s: exit %d (%v), want %d:\n%s", line, code, err, want, out.String())
	}
}

func (w *exampleWorld) kill(t *testing.T, cmd *exec.Cmd, done chan error) {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil {
		t.Errorf("kill: %v", err)
	}
	<-done
}

// isUp is whether a worker has its heartbeat row, or serve's page answers.
func (w *exampleWorld) isUp(t *testing.T, command, line string) bool {
	t.Helper()
	if command == "serve" {
		resp, err := http.Get("http://" + loopbackAddr.FindString(line) + "/healthz")
		if err != nil {
			return false
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode == http.StatusOK
	}
	var n int
	if err := pgtest.WithConn(w.dsn("postgres"), func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "select count(*) from lab.workers").Scan(&n)
	}); err != nil {
		t.Fatal(err)
	}
	return n > 0
}
