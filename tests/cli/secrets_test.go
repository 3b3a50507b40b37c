package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestDSNNeverShown: a connection string that cannot be parsed is refused
// (exit 2) without showing it, whichever way it hides its password: spaces
// around "=" (valid for libpq), a URL password holding "@", a quoted one.
// Nor does the search_path that --schema sets appear.
func TestDSNNeverShown(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"host=127.0.0.1 port=notanumber password = SECRETPW",
		"host=127.0.0.1 password = 'SECRET@PW x' port=notanumber",
		"postgres://me:SECRET@PW@127.0.0.1:notaport/shop",
		"postgresql://me:SECRET%40PW@127.0.0.1/shop?connect_timeout=SECRETPW",
		"host=127.0.0.1 password=SECRETPW sslmode=SECRETPW",
		"host=127.0.0.1 password=SECRETPW\\ port=1 port=notanumber",
	} {
		for _, args := range [][]string{
			{"inspect", "j"}, {"run", "j"}, {"drain", "j"}, {"drain", "--workers", "3", "j"}, {"report", "j"},
			{"migrate"}, {"status"}, {"worker"},
		} {
			r := clitest.Run(t, append([]string{"--dsn", dsn, "--schema", "lab"}, args...)...)
			wantFailure(t, r, 2, "dsn: ", "the connection string is not shown")
			for _, part := range []string{"SECRET", "search_path"} {
				if strings.Contains(r.Stderr, part) {
					t.Fatalf("chunks %s with the DSN %q shows %q:\n%s", strings.Join(args, " "), dsn, part, r.Stderr)
				}
			}
		}
	}
}

// TestSchemaIsAStartupParameter: --schema reaches the session whatever the
// connection string ends with. A key=value string ending in a backslash
// (libpq drops it) used to swallow the search_path appended to it.
func TestSchemaIsAStartupParameter(t *testing.T) {
	t.Parallel()
	j := seedJob(t, newLab(t), "j", 5, 2)
	for _, dsn := range []string{pgtest.DSN() + ` application_name=chunks\`, pgtest.DSN() + " options='-c search_path=public'"} {
		r := clitest.Run(t, "--dsn", dsn, "--schema", j.lab.Name, "--json", "inspect", "j")
		wantJSON(t, r, &driver.Job{JobID: "j", Tenant: j.Tenant, Targets: j.Targets, ChunkSize: 2, NextIndex: 0})
	}
}

// TestMissingDSN: with no connection string anywhere, the failure says where
// chunks looked, besides libpq's socket.
func TestMissingDSN(t *testing.T) {
	t.Parallel()
	r := clitest.RunWith(t, clitest.Options{Env: []string{"PGHOST=" + t.TempDir()}}, "--schema", "lab", "inspect", "j") // no server listens there
	wantFailure(t, r, 1, ".s.PGSQL.5432", "not --dsn, $CHUNKS_DSN nor $DATABASE_URL", "PG* variables")
}

// TestDemoKeepsPasswordsOut runs chunks demo --dsn with a password in the
// DSN, in a database of its own whose event trigger makes every chunk of
// the demo's orders slow, so that each child process (the crash drill, the
// two drains) lives long enough to be seen in /proc: no argv of them holds
// the password (they get the DSN in their environment), and neither does
// anything the demo prints.
func TestDemoKeepsPasswordsOut(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	db := "demo_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "create database "+db); err != nil {
		cannotRun(t, "this test needs a database of its own: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "drop database "+db+" with (force)"); err != nil {
			t.Errorf("drop database %s: %v", db, err)
		}
	})
	secret := "SECRETPW-" + hex.EncodeToString(b[:])
	dsn := pgtest.DSN() + " dbname=" + db + " password=" + secret
	setup := pgtest.Connect(t, dsn) // the test server trusts local connections: the password is only carried
	if _, err := setup.Exec(ctx, `create schema slow;
		create function slow.sleep() returns trigger language plpgsql as $$ begin perform pg_sleep(0.3); return null; end $$;
		create function slow.on_create() returns event_trigger language plpgsql as $$
		declare r record;
		begin
		  for r in select object_identity from pg_event_trigger_ddl_commands()
		            where object_type = 'table' and object_identity like 'festival\_demo\_%.orders' loop
		    execute format('create trigger slow after update on %s for each statement execute function slow.sleep()', r.object_identity);
		  end loop;
		end $$;
		create event trigger slow_orders on ddl_command_end when tag in ('CREATE TABLE') execute function slow.on_create()`); err != nil {
		cannotRun(t, "this test needs an event trigger (superuser): %v", err)
	}

	r, seen := watchChildren(t, clitest.Start(t, clitest.Options{Timeout: 90 * time.Second}, "demo", "--dsn", dsn))
	wantDemo(t, r)
	if len(seen) < 3 {
		t.Fatalf("saw %d child processes of the demo, want the crash drill and two drains: %v", len(seen), seen)
	}
	wantDSNInEnvironment(t, seen, dsn, secret)
	if strings.Contains(r.Stdout+r.Stderr, secret) {
		t.Fatalf("the demo printed the password:\n%v", r)
	}
	m := strings.Fields(r.Stdout[strings.Index(r.Stdout, "The schema ")+len("The schema "):])
	if len(m) == 0 || !strings.HasPrefix(m[0], "festival_demo_") {
		t.Fatalf("the demo does not name the schema it left:\n%v", r)
	}
	if !strings.Contains(r.Stdout, "psql -h 127.0.0.1 -p ") || !strings.Contains(r.Stdout, "-d "+db+" -c 'select * from "+m[0]+".job_audit") ||
		!strings.Contains(r.Stdout, "(psql asks for the password, or reads $PGPASSWORD: it is not printed here)") {
		t.Fatalf("the demo's psql line:\n%s", r.Stdout)
	}
	var audit int
	if err := setup.QueryRow(ctx, "select count(*) from "+pgx.Identifier{m[0], "job_audit"}.Sanitize()).Scan(&audit); err != nil || audit != 40+37 {
		t.Fatalf("%s.job_audit: %d rows (%v), want 77 (the festival's 40, its undo's 37)", m[0], audit, err)
	}
}

// child is what /proc showed of a child process.
type child struct {
	argv    string // its argv, joined by spaces
	environ string // its environment, each VAR=value between NULs
}

// watchChildren waits for p, recording every child it starts as it runs.
// p.Wait runs in a goroutine of its own; when it fails the test (p ran past
// its timeout, say), that goroutine ends without a result and the test
// stops here, instead of watching a process that is gone for ever.
func watchChildren(t testing.TB, p *clitest.Proc) (clitest.Result, map[int]child) {
	t.Helper()
	seen := map[int]child{}
	var r clitest.Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		r = p.Wait(t)
	}()
	for {
		select {
		case <-done:
			if t.Failed() {
				t.FailNow()
			}
			return r, seen
		default:
			children(p.PID(), seen)
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// wantDSNInEnvironment fails unless every child got dsn through its
// environment (CHUNKS_DSN; the bench's pgbench, libpq's PG* variables with
// PGPASSWORD secret) and none shows secret in its argv.
func wantDSNInEnvironment(t testing.TB, seen map[int]child, dsn, secret string) {
	t.Helper()
	for pid, c := range seen {
		if strings.Contains(c.argv, secret) {
			t.Errorf("child %d has the password in its argv: %q", pid, c.argv)
		}
		if argv := strings.Fields(c.argv); len(argv) > 0 && filepath.Base(argv[0]) == "pgbench" {
			if !strings.Contains(c.environ, "\x00PGPASSWORD="+secret+"\x00") {
				t.Errorf("pgbench child %d (%q) does not get the password through its environment", pid, c.argv)
			}
			continue
		}
		if !strings.Contains(c.environ, "\x00CHUNKS_DSN="+dsn+"\x00") {
			t.Errorf("child %d (%q) does not get the DSN through its environment", pid, c.argv)
		}
	}
}

// children records the argv and environment of every live child of parent
// that has exec'd (until then a child shows its parent's).
func children(parent int, seen map[int]child) {
	own, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(parent), "cmdline"))
	if err != nil {
		return
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, known := seen[pid]; known {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after the last ")".
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		cmdline, err1 := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		env, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err1 != nil || err2 != nil || len(cmdline) == 0 || bytes.Equal(cmdline, own) {
			continue // gone already, or not exec'd yet
		}
		seen[pid] = child{strings.ReplaceAll(string(cmdline), "\x00", " "), "\x00" + string(env)}
	}
}
