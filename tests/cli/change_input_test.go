package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// paymentsTable is a user's table for the definitions of these tests.
const paymentsTable = `create table %[1]s.payments(payment_id bigint primary key, status text not null, lock_version integer not null,
  rate double precision not null default 1);
insert into %[1]s.payments select g, 'captured', 3 from generate_series(1, 3) g;`

// writeFile writes text to a file of the test's own and returns its path.
func writeFile(t testing.TB, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantNoChange fails unless the lab has no declared change.
func wantNoChange(t *testing.T, l *lab) {
	t.Helper()
	if got := mustText(t, l.Conn, "select count(*)::text from changes"); got != "0" {
		t.Fatalf("%s changes defined", got)
	}
}

// Issue 35 items 9, 15 and 16 through the binary: chunks change define
// refuses a key given twice, \u0000, a composite key of no unique key and text that is not
// JSON as invalid input (exit 2) naming the field, with nothing defined,
// and a 900 KB constant the server refuses makes a short line.
func TestChangeDefineInput(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	shop := l.UserSchema(t, paymentsTable)
	head := `{"name": "hold", "table": "` + shop + `.payments", "key": "payment_id", "version": "lock_version"`
	long := strings.Repeat("x", 900_000)
	for _, c := range []struct {
		name, def string
		code      int
		msg       string
	}{
		{"a key twice", head + `, "set": {"status": "approved-value", "status": "sneaky"}}`, 2, `chunks: invalid: set: duplicate key "status"`},
		{"\\u0000", head + `, "set": {"status": "on\u0000hold"}}`, 2, `chunks: invalid: set.status: must not contain \u0000 (PostgreSQL text cannot store it)`},
		{"a composite key that is no unique key", `{"name": "hold", "table": "` + shop + `.payments", "key": ["payment_id", "status"], "set": {"status": "x"}}`, 2,
			"chunks: invalid: key: columns (payment_id, status) of " + shop + ".payments are not unique together (no primary key, unique constraint or non-partial unique index of exactly these columns)"},
		{"a 900 KB constant of a float", head + `, "set": {"rate": "` + long + `"}}`, 2,
			`chunks: invalid: set.rate: constant ` + driver.Excerpt(`"`+long+`"`, false) + ` is not a value of column ` + shop +
				`.payments.rate (double precision): invalid input syntax for type double precision: "` + driver.Excerpt(long, false) + `"`},
		{"1e400 for a float", head + `, "set": {"rate": 1e400}}`, 2,
			`chunks: invalid: set.rate: constant ` + driver.Excerpt("1"+strings.Repeat("0", 400), false) + ` is not a value of column ` + shop +
				`.payments.rate (double precision): "` + driver.Excerpt("1"+strings.Repeat("0", 400), false) + `" is out of range for type double precision`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := l.Chunks(t, "change", "define", writeFile(t, "def.json", c.def))
			wantFailure(t, r, c.code)
			if r.Stderr != c.msg+"\n" {
				t.Fatalf("stderr:\n%.600s\nwant\n%.600s", r.Stderr, c.msg)
			}
			wantNoChange(t, l)
		})
	}
}

// Issue 35 item 16: an input file that cannot be read is invalid input
// (exit 2), like every other bad input, for every command that reads one.
func TestInputFileMissing(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	missing := filepath.Join(t.TempDir(), "nope.json")
	dir := t.TempDir()
	for _, args := range [][]string{
		{"register", missing},
		{"check", missing},
		{"register", "--change", "hold", missing},
		{"manifest", "--job-id", "j", "--tenant", "t", "--chunk-size", "1", "--allow-partial", missing},
		{"change", "define", missing},
		{"campaign", "create", "--tenant", "t", "--chunk-size", "1", "--allow-partial", "spring", missing},
		{"campaign", "create", "--change", "hold", "--tenant", "t", "--chunk-size", "1", "--allow-partial", "spring", missing},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			if args[0] != "manifest" { // manifest needs no database: it takes no --dsn
				args = append(l.Globals(), args...)
			}
			wantFailure(t, clitest.Run(t, args...), 2, `chunks: invalid: "`+missing+`": cannot be read: no such file or directory`)
			last := len(args) - 1
			args[last] = dir
			wantFailure(t, clitest.Run(t, args...), 2, `chunks: invalid: "`+dir+`": cannot be read: it is a directory`)
		})
	}
}

// Issue 35 item 16: a refused connection says so once. Without sslmode,
// libpq's default (prefer) makes two attempts at one address, and pgx
// reports both.
func TestRefusedConnectionOnce(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"--dsn", nil, []string{"--dsn", "host=127.0.0.1 port=1 user=nobody dbname=nothing", "--schema", "lab", "report", "j"}},
		{"PG variables", []string{"PGHOST=127.0.0.1", "PGPORT=1", "PGUSER=nobody", "PGDATABASE=nothing"}, []string{"--schema", "lab", "report", "j"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := clitest.RunWith(t, clitest.Options{Env: c.env}, c.args...)
			wantFailure(t, r, 1, "127.0.0.1:1", "connection refused")
			if n := strings.Count(r.Stderr, "connection refused"); n != 1 {
				t.Fatalf("connection refused %d times:\n%s", n, r.Stderr)
			}
		})
	}
}

// Issue 35 item 16: an operator, a viewer or a role with no grant that
// defines or drops a change is told that only the schema's owner may, not
// to ask for chunks grant.
func TestChangeDefineOwnerOnly(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	shop := l.UserSchema(t, paymentsTable)
	def := writeFile(t, "def.json", `{"name": "hold", "table": "`+shop+`.payments", "key": "payment_id", "version": "lock_version", "set": {"status": "held"}}`)
	op, viewer, outsider := pgtest.NewRole(t, pgtest.DSN(), "op"), pgtest.NewRole(t, pgtest.DSN(), "viewer"), pgtest.NewRole(t, pgtest.DSN(), "out")
	wantOK(t, l.Chunks(t, "grant", "--operator", op.Name, "--viewer", viewer.Name))
	owner := mustText(t, l.Conn, "select pg_get_userbyid(nspowner)::text from pg_namespace where nspname = $1", l.Name)
	for _, role := range []pgtest.Role{op, viewer, outsider} {
		for _, args := range [][]string{{"change", "define", def}, {"change", "drop", "hold"}} {
			t.Run(role.Name+" "+args[1], func(t *testing.T) {
				r := clitest.Run(t, append([]string{"--dsn", role.DSN(pgtest.DSN()), "--schema", l.Name}, args...)...)
				wantFailure(t, r, 1, "chunks: permission denied to "+args[1]+" a change in schema "+l.Name+" (SQLSTATE 42501): only its owner ("+owner+
					"), or a member of that role, may define or drop a change, and role "+role.Name+" is neither; chunks grant gives no such right\n")
				if strings.Contains(r.Stderr, "--operator") {
					t.Fatalf("the error asks for a grant: %s", r.Stderr)
				}
			})
		}
	}
	wantNoChange(t, l)
}

// Issue 35 item 16: an error of the user's own SQL (a relation or an
// operator that does not exist) is not taken for chunks missing; a chunks
// function that is missing still is.
func TestInstallHintOnlyForChunks(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	const hint = "is chunks installed in the schema"
	create := func(query string) clitest.Result {
		return l.Chunks(t, "campaign", "create", "--tenant", "t", "--chunk-size", "1", "--allow-partial", "--from-query", query, "spring")
	}
	for query, want := range map[string]string{
		"select id, revision, qty from nope":                         `relation "nope" does not exist (SQLSTATE 42P01)`,
		"select id, revision, qty from orders where state = 1":       "operator does not exist: text = integer (SQLSTATE 42883)",
		"select id, revision, qty from orders where nope(state) = 1": "function nope(text) does not exist (SQLSTATE 42883)",
		// Named like chunks' own, but in a schema of the user's.
		"select id, revision, qty from public.jobs":                           `relation "public.jobs" does not exist (SQLSTATE 42P01)`,
		"select id, revision, qty from orders where public.report(state) = 1": "function public.report(text) does not exist (SQLSTATE 42883)",
	} {
		r := create(query)
		wantFailure(t, r, 1, want)
		if strings.Contains(r.Stderr, hint) {
			t.Fatalf("the user's error gets the install hint: %s", r.Stderr)
		}
	}
	r := clitest.Run(t, "--dsn", pgtest.DSN(), "--schema", "nochunks", "report", "j")
	wantFailure(t, r, 1, "function report(unknown) does not exist (SQLSTATE 42883)", hint)
}

// Issue 35 item 14 through the binary: a define that waits for another
// session's define of the same name answers as if it came after it:
// "already defined" (exit 0) for the same definition, a conflict (exit 3)
// for another.
func TestChangeDefineConcurrentProcesses(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	shop := l.UserSchema(t, paymentsTable)
	same := `{"name": "hold", "table": "` + shop + `.payments", "key": "payment_id", "version": "lock_version", "set": {"status": "held"}}`
	other := strings.Replace(same, `"held"`, `"on_hold"`, 1)
	for _, c := range []struct {
		name, def string
		code      int
		out       string
	}{
		{"the same definition", same, 0, "change hold was already defined with this definition; nothing changed\n"},
		{"another definition", other, 3, "chunks: conflict: change hold: already defined with a different definition (chunks change show hold)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l.Exec(t, "select drop_change('hold')")
			tx, err := pgtest.Connect(t, l.DSN).Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if _, err := tx.Exec(ctx, "select define_change($1)", same); err != nil {
				t.Fatal(err)
			}
			p := l.Start(t, clitest.Options{}, "change", "define", writeFile(t, "def.json", c.def))
			deadline := time.Now().Add(10 * time.Second)
			for mustText(t, l.Conn, `select count(*)::text from pg_stat_activity
			    where wait_event_type = 'Lock' and query like '%define_change%' and pid <> pg_backend_pid()`) != "1" {
				if time.Now().After(deadline) {
					t.Fatal("chunks change define never waited for the other define")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			r := p.Wait(t)
			if got := r.Stdout + r.Stderr; r.Code != c.code || got != c.out {
				t.Fatalf("want exit %d and %q, got %v", c.code, c.out, r)
			}
			if got := mustText(t, l.Conn, "select string_agg(name || ' ' || (definition #>> '{set,status}'), ',') from changes"); got != "hold held" {
				t.Fatalf("changes: %s", got)
			}
		})
	}
}
