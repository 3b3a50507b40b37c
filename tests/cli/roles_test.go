package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// chunks grant: every --operator and --viewer in one transaction, --revoke,
// --json, and bad input refused (exit 2) naming the field, with nothing
// granted.
func TestGrant(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	alice, bob := pgtest.NewRole(t, pgtest.DSN(), "alice"), pgtest.NewRole(t, pgtest.DSN(), "bob")
	executes := func(role, fn string) string {
		return mustText(t, l.Conn, "select has_function_privilege($1, $2, 'EXECUTE')::text", role, l.Name+"."+fn)
	}

	wantFailure(t, l.Chunks(t, "grant"), 2, "grant needs at least one --operator ROLE, --viewer ROLE or --approver ROLE")
	wantFailure(t, l.Chunks(t, "grant", "alice"), 2, "grant takes no arguments")
	wantFailure(t, l.Chunks(t, "grant", "--operator", alice.Name, "--viewer", "nobody_here"), 2,
		`role: there is no role "nobody_here"; create it first (CREATE ROLE)`)
	if got := executes(alice.Name, "report(text)"); got != "false" {
		t.Fatalf("a refused grant left alice with report: %s", got)
	}

	out := wantOK(t, l.Chunks(t, "grant", "--operator", alice.Name, "--viewer", bob.Name))
	if out != "granted operator to "+alice.Name+": EXECUTE on 52 functions, SELECT on 21 tables\n"+
		"granted viewer to "+bob.Name+": EXECUTE on 19 functions, SELECT on 21 tables\n" {
		t.Fatalf("grant: %q", out)
	}
	if executes(alice.Name, "run_chunk(text)") != "true" || executes(bob.Name, "run_chunk(text)") != "false" || executes(bob.Name, "report(text)") != "true" ||
		executes(alice.Name, "run_chunk(text, text)") != "true" || executes(bob.Name, "run_chunk(text, text)") != "false" || executes(bob.Name, "report(text, text)") != "true" {
		t.Fatal("grant did not grant what it said")
	}
	g := decode[driver.Granted](t, l.Chunks(t, "--json", "grant", "--revoke", "--operator", alice.Name))
	if g.Role != alice.Name || g.Access != driver.Operator || !g.Revoked || len(g.Functions) != 33 || len(g.Tables) != 0 {
		t.Fatalf("grant --revoke --json: %+v", g)
	}
	if executes(alice.Name, "run_chunk(text)") != "false" || executes(alice.Name, "report(text)") != "true" {
		t.Fatal("revoking operator must leave a viewer")
	}
	// --json names the role as pg_roles spells it, not as an SQL identifier.
	mixed := pgtest.NewRole(t, pgtest.DSN(), "Mixed Case")
	g = decode[driver.Granted](t, l.Chunks(t, "--json", "grant", "--viewer", mixed.Name))
	if g.Role != mixed.Name || g.Access != driver.Viewer || g.Revoked || len(g.Functions) != 19 {
		t.Fatalf("grant --json to %q: %+v", mixed.Name, g)
	}
	if out := wantOK(t, l.Chunks(t, "grant", "--revoke", "--viewer", mixed.Name)); out != "revoked viewer from "+mixed.Name+": EXECUTE on 54 functions, SELECT on 21 tables\n" {
		t.Fatalf("grant --revoke: %q", out)
	}
	// The schema's owner (here the test's superuser) is refused, revoke or
	// grant, naming it.
	owner := mustText(t, l.Conn, "select pg_get_userbyid(nspowner)::text from pg_namespace where nspname = $1", l.Name)
	for _, flag := range []string{"--viewer", "--operator"} {
		for _, revoke := range [][]string{{"--revoke"}, nil} {
			args := append(append([]string{"grant"}, revoke...), flag, owner)
			wantFailure(t, l.Chunks(t, args...), 2, fmt.Sprintf("role: %q owns schema %s, and every chunks function runs with its privileges", owner, l.Name))
		}
	}

	// A viewer runs nothing: the CLI says what to do about it.
	wantFailure(t, clitest.Run(t, "--dsn", bob.DSN(pgtest.DSN()), "--schema", l.Name, "run", "nojob"), 1,
		"permission denied for function run_chunk (SQLSTATE 42501)", "chunks grant --operator ROLE")
}

// chunks migrate --owner: the schema, its tables and its functions belong
// to that role, with no warning; an unknown owner is refused before
// anything is created. Without --owner, a superuser owner is warned about.
func TestMigrateOwner(t *testing.T) {
	t.Parallel()
	owner := pgtest.NewRole(t, pgtest.DSN(), "owner")
	schema := pgtest.NewSchemaName(t)
	admin := pgtest.Connect(t, pgtest.DSN())
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "drop schema if exists "+schema+" cascade"); err != nil {
			t.Error(err)
		}
	})
	g := []string{"--dsn", pgtest.DSN(), "--schema", schema}
	wantFailure(t, clitest.Run(t, append(g, "migrate", "--owner", "nobody_here")...), 2, `owner: there is no role "nobody_here"`)
	if got := mustText(t, admin, "select (to_regnamespace($1) is null)::text", schema); got != "true" {
		t.Fatal("a refused migrate left the schema")
	}
	first := clitest.Run(t, append(g, "migrate", "--owner", owner.Name)...)
	// Its one word on stderr: the writer role it made (docs/roles.md "Code on your tables").
	if want := "chunks migrate: NOTICE: created role " + schema + "_writer (NOLOGIN), the writer: the owner of each table of a declared change grants it SELECT and UPDATE\n"; first.Code != 0 || first.Stderr != want ||
		!strings.HasSuffix(first.Stdout, "owned by "+owner.Name+"\n") {
		t.Fatalf("migrate --owner: %v", first)
	}
	// Everything is the owner's, but the writer's one function.
	if got := mustText(t, admin, `select (select count(*) from pg_class where relnamespace = $1::text::regnamespace and relkind = 'r' and relowner <> $2::regrole)
	    + (select count(*) from pg_proc where pronamespace = $1::text::regnamespace and proowner <> $2::regrole
	         and not (proname = 'writer_exec' and proowner = ($1 || '_writer')::regrole))
	    + (select count(*) from pg_namespace where nspname = $1::text and nspowner <> $2::regrole)`, schema, owner.Name); got != "0" {
		t.Fatalf("%s objects of the schema are not the owner's", got)
	}
	// Again without --owner: the schema keeps its owner.
	if out := wantOK(t, clitest.Run(t, append(g, "migrate")...)); !strings.HasSuffix(out, "owned by "+owner.Name+"\n") {
		t.Fatalf("migrate again: %q", out)
	}
	// A superuser owner: said, not refused.
	r := clitest.Run(t, append(g, "migrate", "--owner", mustText(t, admin, "select current_user::text"))...)
	if r.Code != 0 || !superuserWarning.MatchString(r.Stderr) {
		t.Fatalf("migrate --owner a superuser: %v", r)
	}
}

// A role that was never granted access has no USAGE on the schema, so the
// functions look missing (42883) to it: status and a worker say it is a
// missing grant (42501) and which one, not that chunks is not installed.
func TestNoGrantSaysWhichGrant(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	nobody := pgtest.NewRole(t, pgtest.DSN(), "nogrant")
	as := []string{"--dsn", nobody.DSN(pgtest.DSN()), "--schema", l.Name}
	owner := mustText(t, l.Conn, "select pg_get_userbyid(nspowner)::text from pg_namespace where nspname = $1", l.Name)
	want := func(grant string) []string {
		return []string{fmt.Sprintf("permission denied for schema %s (SQLSTATE 42501)", l.Name),
			fmt.Sprintf("role %s has no chunks access", nobody.Name),
			fmt.Sprintf("the schema's owner (%s) grants it: chunks grant --schema %s %s %s", owner, l.Name, grant, nobody.Name)}
	}
	for _, args := range [][]string{{"status"}, {"report", "nojob"}} {
		r := clitest.Run(t, append(as, args...)...)
		wantFailure(t, r, 1, want("--viewer")...)
		if strings.Contains(r.Stderr, "migrate") {
			t.Fatalf("%s says to migrate: %v", args[0], r)
		}
	}
	r := clitest.Run(t, append(as, "worker", "--id", "w1")...)
	if r.Code != 1 || !strings.Contains(r.Stderr, "cannot start") || strings.Contains(r.Stderr, "migrate") {
		t.Fatalf("a worker without a grant: %v", r)
	}
	for _, part := range want("--operator") {
		if !strings.Contains(r.Stderr, part) {
			t.Fatalf("a worker without a grant does not say %q: %v", part, r)
		}
	}
}
