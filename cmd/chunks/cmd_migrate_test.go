package main

import (
	"fmt"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

func TestMigrateOptions(t *testing.T) {
	if got, want := *parsed(t, parseMigrate, "migrate", "--schema", "s1", "--owner", "o1"), (migrateOptions{Schema: "s1", Owner: "o1"}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	wantInvalid(t, &migrateOptions{}, "usage: migrate needs --schema (or $CHUNKS_SCHEMA)")
	wantInvalid(t, &migrateOptions{Schema: "a b"}, "schema", `"a b"`)
	wantExit(t, chunksIn(t, nil, "", "migrate", "--schema", "s1", "extra"), 2, `migrate takes no arguments, got ["extra"]`)
}

// Migrating a migrated schema again changes nothing and says so; its owner
// here is the test's superuser, which migrate warns about on stderr.
func TestMigrateRun(t *testing.T) {
	l := clitest.NewLab(t)
	var version int
	var owner string
	if err := l.Conn.QueryRow(ctx, "select (select max(version) from schema_version), current_user::text").Scan(&version, &owner); err != nil {
		t.Fatal(err)
	}
	d := labDeps(l)
	stderr := &clitest.Output{}
	d.stderr = stderr
	want := fmt.Sprintf("chunks is installed in schema %s (migration version %d, functions up to date), owned by %s\n", l.Name, version, owner)
	if got := wantRun(t, runMigrate, d, &migrateOptions{Schema: l.Name}); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	warning := fmt.Sprintf("chunks migrate: WARNING: schema %s and its SECURITY DEFINER functions belong to %s, a superuser: "+
		"every role granted chunks access then acts with a superuser's rights inside them. "+
		"Recommended: chunks migrate --owner ROLE with a role that is not a superuser (docs/roles.md)\n", l.Name, owner)
	if got := stderr.String(); got != warning {
		t.Errorf("stderr: got %q, want %q", got, warning)
	}
	d.json = true
	wantRunOut(t, runMigrate, d, &migrateOptions{Schema: l.Name}, fmt.Sprintf(`{"owner":%q,"schema":%q,"version":%d}`+"\n", owner, l.Name, version))
	wantExit(t, chunksIn(t, l, "", "migrate", "--owner", "nobody_here"), 2, `owner: there is no role "nobody_here"`)
}
