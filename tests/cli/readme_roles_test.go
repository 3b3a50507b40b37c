package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// docs/roles.md works as written, on a server of its own (its roles
// are the cluster's): the set-up block (a superuser runs chunks migrate
// --owner and chunks grant), the operator's and the viewer's psql sessions
// replayed through psql and compared line by line, the CLI block, and the
// privileges table against the catalog. And the guide's main psql
// session, replayed as the operator: an operator can do all of it (given
// SELECT, INSERT and UPDATE on orders for the two statements that stand
// for the application).
func TestREADMERoles(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("psql")
	pgtest.RequireTool(t, err, "psql", "postgresql-client")
	blocks := pgtest.WantDocBlocks(t, 6, "psql session, set-up, operator, viewer, CLI, privileges", "<!-- tests TestREADMERoles", "psql.md", "roles.md")
	session, setup, operator, viewer, cliBlock, privileges := blocks[0], blocks[1], blocks[2], blocks[3], blocks[4], blocks[5]

	srv := ownServer(t)
	dsn := srv.DSN() // key=value, like the demo's export CHUNKS_DSN=... line
	env := shellEnv("CHUNKS_DSN=" + dsn)
	sh := func(script string) (string, error) {
		cmd := exec.Command("sh", "-e", "-c", script)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := sh(setup); err != nil {
		t.Fatalf("the set-up block: %v\n%s", err, out)
	} else if !strings.Contains(out, "owned by chunks_owner") || !strings.Contains(out, "granted operator to alice: EXECUTE on 52 functions, SELECT on 21 tables") ||
		!strings.Contains(out, "granted viewer to grafana: EXECUTE on 19 functions, SELECT on 21 tables") ||
		!strings.Contains(out, "granted approver to bob: EXECUTE on 25 functions, SELECT on 21 tables") || strings.Contains(out, "WARNING") {
		t.Fatalf("the set-up block said:\n%s", out)
	}
	admin := pgtest.Connect(t, dsn)
	if _, err := admin.Exec(ctx, "grant select, insert, update on lab.orders to alice"); err != nil { // the application's statements
		t.Fatal(err)
	}
	psql := func(what, user, transcript string) {
		t.Helper()
		input, want := pgtest.Transcript(transcript)
		cmd := exec.Command("psql", "-X", dsn+" user="+user)
		cmd.Env = pgtest.CleanEnv()
		cmd.Stdin = strings.NewReader(input)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out // one pipe: psql's results and errors in their order
		if err := cmd.Run(); err != nil {
			t.Fatalf("psql as %s: %v\n%s", user, err, out.String())
		}
		if got := pgtest.TrimLines(out.String()); got != want {
			t.Errorf("%s, as %s:\n--- got\n%s\n--- docs\n%s", what, user, got, want)
		}
	}
	psql("the guide's psql session", "alice", session)
	if _, err := admin.Exec(ctx, "revoke select, insert, update on lab.orders from alice"); err != nil { // for the session only
		t.Fatal(err)
	}
	psql("the operator's session", "alice", operator)
	psql("the viewer's session", "grafana", viewer)

	// The CLI block, line by line: its comments say what each prints.
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(cliBlock), "\n") {
		lines = append(lines, strings.TrimSpace(strings.SplitN(l, "#", 2)[0]))
	}
	env = append(env, "CHUNKS_SCHEMA=lab") // the reader's shell has the set-up's export
	for i, want := range []struct {
		fails bool
		says  string
	}{
		{false, "job initech-q4: 1 call cancelled 102; next_index 2; the job is done"},
		{false, "job initech-q4: 2 approved, 2 committed, 0 remaining: 2 matching, 0 drifted, 0 missing"},
		{true, "chunks: ERROR: permission denied for function pause_job (SQLSTATE 42501) (this role has no chunks access for that: " +
			"the schema's owner grants it with chunks grant --operator ROLE, or --viewer ROLE to read)"},
	} {
		out, err := sh(lines[i])
		var exitErr *exec.ExitError
		if failed := errors.As(err, &exitErr); failed != want.fails || (failed && exitErr.ExitCode() != 1) || !strings.Contains(out, want.says) {
			t.Errorf("%s: %v\n%s\nwant it to say %q", lines[i], err, out, want.says)
		}
	}

	// The privileges table, against the catalog.
	var rows [][4]string
	for _, l := range strings.Split(strings.TrimSpace(privileges), "\n")[2:] {
		cells := strings.Split(strings.Trim(l, "|"), "|")
		if len(cells) != 4 {
			t.Fatalf("docs privileges row %q", l)
		}
		rows = append(rows, [4]string{strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2]), strings.TrimSpace(cells[3])})
	}
	yes := map[bool]string{true: "yes", false: "no"}
	want := [][4]string{}
	var usageV, usageO, usageA bool
	if err := admin.QueryRow(ctx, "select has_schema_privilege('grafana', 'lab', 'USAGE'), has_schema_privilege('alice', 'lab', 'USAGE'), has_schema_privilege('bob', 'lab', 'USAGE')").Scan(&usageV, &usageO, &usageA); err != nil {
		t.Fatal(err)
	}
	want = append(want, [4]string{"`USAGE` on the schema", yes[usageV], yes[usageO], yes[usageA]})
	tables := func(role, privilege string) []string {
		t.Helper()
		rows, _ := admin.Query(ctx, `select c.relname::text from pg_class as c
		  where c.relnamespace = 'lab'::regnamespace and c.relkind = 'r' and has_table_privilege($1, c.oid, $2) order by 1`, role, privilege)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	selected := tables("grafana", "SELECT")
	if !slices.Equal(selected, tables("alice", "SELECT")) || !slices.Equal(selected, tables("bob", "SELECT")) {
		t.Fatalf("viewer, operator and approver read different tables: %v, %v, %v", selected, tables("alice", "SELECT"), tables("bob", "SELECT"))
	}
	want = append(want, [4]string{"`SELECT` on `" + strings.Join(selected, "`, `") + "`", "yes", "yes", "yes"})
	none := func(role string) bool {
		return !slices.Contains(selected, "orders") && !slices.Contains(selected, "schema_version") &&
			len(tables(role, "INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER")) == 0
	}
	want = append(want, [4]string{"any privilege on `orders` or `schema_version`, or to write any table", yes[!none("grafana")], yes[!none("alice")], yes[!none("bob")]})
	fnRows, _ := admin.Query(ctx, `select format('%s(%s)', p.proname, pg_get_function_identity_arguments(p.oid)),
	    has_function_privilege('grafana', p.oid, 'EXECUTE'), has_function_privilege('alice', p.oid, 'EXECUTE'),
	    has_function_privilege('bob', p.oid, 'EXECUTE')
	  from pg_proc as p where p.pronamespace = 'lab'::regnamespace
	   and (has_function_privilege('grafana', p.oid, 'EXECUTE') or has_function_privilege('alice', p.oid, 'EXECUTE')
	        or has_function_privilege('bob', p.oid, 'EXECUTE'))
	 order by 2 desc, 3 desc, 1`)
	type fn struct {
		Signature                  string
		Viewer, Operator, Approver bool
	}
	fns, err := pgx.CollectRows(fnRows, pgx.RowToStructByPos[fn])
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fns {
		want = append(want, [4]string{"`EXECUTE` on `" + f.Signature + "`", yes[f.Viewer], yes[f.Operator], yes[f.Approver]})
	}
	if got, wantText := fmt.Sprint(rows), fmt.Sprint(want); got != wantText {
		t.Errorf("the guide's privileges table:\n%s\nthe catalog:\n%s", table(rows), table(want))
	}
}

// table shows rows as the guide writes them.
func table(rows [][4]string) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r[0], r[1], r[2], r[3])
	}
	return strings.TrimSuffix(b.String(), "\n")
}
