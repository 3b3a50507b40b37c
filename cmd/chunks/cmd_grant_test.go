package main

import (
	"slices"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

func TestGrantOptions(t *testing.T) {
	got := parsed(t, parseGrant, "grant", "--schema", "s1", "--operator", "a", "--operator", "b", "--viewer", "c", "--revoke")
	if got.Schema != "s1" || !slices.Equal(got.Operators, []string{"a", "b"}) || !slices.Equal(got.Viewers, []string{"c"}) || !got.Revoke {
		t.Errorf("got %+v", got)
	}
	wantInvalid(t, &grantOptions{Schema: "s1"}, "usage: grant needs at least one --operator ROLE, --viewer ROLE or --approver ROLE")
	wantInvalid(t, &grantOptions{Viewers: []string{"c"}}, "usage: grant needs --schema (or $CHUNKS_SCHEMA)")
	wantExit(t, chunksIn(t, nil, "", "grant", "--operator", "a", "alice"), 2, `grant takes no arguments, got ["alice"]: name roles with --operator, --viewer or --approver`)
}

// Every role in one transaction: a role that does not exist leaves the
// others without access.
func TestGrantRun(t *testing.T) {
	l := clitest.NewLab(t)
	alice, bob := pgtest.NewRole(t, pgtest.DSN(), "alice"), pgtest.NewRole(t, pgtest.DSN(), "bob")
	d := labDeps(l)
	executes := func(role string) bool {
		var ok bool
		if err := l.Conn.QueryRow(ctx, "select has_function_privilege($1, $2, 'EXECUTE')", role, l.Name+".run_chunk(text)").Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	wantRunErr(t, runGrant, d, &grantOptions{Schema: l.Name, Operators: []string{alice.Name}, Viewers: []string{"nobody_here"}},
		driver.ErrInvalid, `invalid: role: there is no role "nobody_here"; create it first (CREATE ROLE)`)
	if executes(alice.Name) {
		t.Fatal("a refused grant left alice an operator")
	}
	want := "granted operator to " + alice.Name + ": EXECUTE on 52 functions, SELECT on 21 tables\n" +
		"granted viewer to " + bob.Name + ": EXECUTE on 19 functions, SELECT on 21 tables\n"
	if got := wantRun(t, runGrant, d, &grantOptions{Schema: l.Name, Operators: []string{alice.Name}, Viewers: []string{bob.Name}}); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !executes(alice.Name) || executes(bob.Name) {
		t.Error("grant did not grant what it said")
	}
	r := chunksIn(t, l, "", "grant", "--json", "--revoke", "--operator", alice.Name)
	var g driver.Granted
	decodeJSON(t, r.Stdout, &g)
	if r.Code != 0 || g.Role != alice.Name || g.Access != driver.Operator || !g.Revoked || len(g.Functions) != 33 || !slices.IsSorted(g.Functions) || len(g.Tables) != 0 {
		t.Errorf("grant --json --revoke: %+v from %v", g, r)
	}
	wantRunOut(t, runGrant, d, &grantOptions{Schema: l.Name, Viewers: []string{bob.Name}, Revoke: true}, "revoked viewer from "+bob.Name+": EXECUTE on 54 functions, SELECT on 21 tables\n")
	if executes(alice.Name) {
		t.Error("alice is still an operator")
	}
}
