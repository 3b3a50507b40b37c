package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Each guide whose session starts from a fresh schema has a test here that
// replays it as a reader types it (guide_lines_test.go): its data block,
// with the demo's `export CHUNKS_DSN=...` pasted over its first line (so
// the block must set $CHUNKS_SCHEMA itself), then its session in the same
// shell, each line printing what its comment says; a guide that leaves a
// process running fails. Then the test reads what the session left.

// docs/cli-guide.md: the walk ends with the undo drained, so the 40
// orders are pending again.
func TestCLIGuide(t *testing.T) {
	t.Parallel()
	dsn := replayGuide(t, "cli-guide.md", "TestCLIGuide", 12)
	wantGuideLeft(t, dsn, "select count(*)::text from lab.orders where state = 'pending'", "40")
}

// docs/fleet.md: a worker started with &, the job paused and resumed under
// it, finished, and the worker stopped by the guide's own kill.
func TestFleetGuide(t *testing.T) {
	t.Parallel()
	dsn := replayGuide(t, "fleet.md", "TestFleetGuide", 7)
	wantGuideLeft(t, dsn, `select format('%s %s', count(*) filter (where state = 'cancelled'),
	    (select count(*) from lab.job_audit where job_id = 'umbrella-recall')) from lab.orders where tenant = 'umbrella'`, "20 20")
}

// docs/operating-a-campaign.md: a campaign of a declared change, three
// rows edited by hand stall three jobs, one campaign skip sets them aside
// and resumes them, the report shows 297 matching and 3 skipped with their
// reason, then the campaign is archived and the change retired, and the
// report still answers. Every other price doubled exactly once.
func TestOperatingGuide(t *testing.T) {
	t.Parallel()
	dsn := replayGuide(t, "operating-a-campaign.md", "TestOperatingGuide", 15)
	wantGuideLeft(t, dsn, `select format('%s %s %s', count(*) filter (where currency = 'EUR' and price_cents = 2 * (1000 + substr(sku, 5)::int) and version = 1),
	    count(*) filter (where price_cents = 1 and version = 0), count(*) filter (where currency = 'USD' and version = 0))
	  from shop.prices`, "297 3 300")
}

// docs/safety.md: the preflight, the canary (pause --after 1, a worker
// started with &, the report of its one chunk), resume, the undo run by the
// same worker, and the worker stopped by the guide's own kill: every order
// pending again, each changed once by the job and once by its undo.
func TestSafetyGuide(t *testing.T) {
	t.Parallel()
	dsn := replayGuide(t, "safety.md", "TestSafetyGuide", 11)
	wantGuideLeft(t, dsn, `select format('%s %s %s', count(*) filter (where state = 'pending' and revision = 2),
	    (select count(*) from lab.job_audit where job_id = 'hooli-q3'), (select count(*) from lab.job_audit where job_id = 'hooli-q3-undo'))
	  from lab.orders where tenant = 'hooli'`, "40 40 40")
}

// docs/safety.md "Two people", with real roles: alice (an operator)
// proposes, cannot approve, and her worker leaves the job queued; bob (an
// approver) reviews it, a wrong digest is refused, his approval lets the
// worker run it; the undo waits for its own approval. Every order pending
// again, each changed once by the job and once by its undo.
func TestTwoPeopleGuide(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("psql")
	pgtest.RequireTool(t, err, "psql (docs/safety.md uses it)", "postgresql-client")
	blocks := pgtest.WantDocBlocks(t, 2, "data, session", "<!-- tests TestTwoPeopleGuide ", "safety.md")
	// The roles first: they are dropped after the database (cleanups run last first).
	alice, bob := pgtest.NewRole(t, pgtest.DSN(), "alice"), pgtest.NewRole(t, pgtest.DSN(), "bob")
	dsn := guideDatabase(t)
	ours := strings.NewReplacer("alice", alice.Name, "bob", bob.Name)
	exports := regexp.MustCompile(`(?m)^export ALICE=.*$`)
	data := ours.Replace(pasteDemoExport(t, blocks[0], dsn))
	if !exports.MatchString(data) {
		t.Fatal("the data block does not export ALICE and BOB")
	}
	data = exports.ReplaceAllLiteralString(data, fmt.Sprintf("export ALICE=%s BOB=%s", localpg.ShellWord(alice.DSN(dsn)), localpg.ShellWord(bob.DSN(dsn))))
	s := newGuideShell(t, shellEnv(), t.TempDir())
	s.data(data)
	if ran := s.walk(blocks[1], ours.Replace); ran != 15 {
		t.Errorf("ran %d lines of the session, want 15", ran)
	}
	s.close()
	wantGuideLeft(t, dsn, `select format('%s %s %s %s', count(*) filter (where state = 'pending' and revision = 2),
	    (select count(*) from lab.job_audit where job_id = 'initech-q4'), (select count(*) from lab.job_audit where job_id = 'initech-q4-undo'),
	    (select string_agg(approved_by, ' ' order by id) from lab.proposals))
	  from lab.orders where tenant = 'initech'`, "20 20 20 "+bob.Name+" "+bob.Name)
}

// docs/psql.md: its first block on a fresh database, chunks migrate and
// then psql, as the superuser of the demo's server, with the session typed
// into it; psql prints exactly the session's output (its results and
// errors in their order).
func TestPsqlGuide(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("psql")
	pgtest.RequireTool(t, err, "psql (docs/psql.md uses it)", "postgresql-client")
	blocks := pgtest.WantDocBlocks(t, 2, "start, session", "<!-- tests TestPsqlGuide ", "psql.md")
	start := guideCommands(blocks[0])
	if len(start) != 2 || start[1] != `psql "$CHUNKS_DSN"` {
		t.Fatalf("docs/psql.md's first block: %q, want chunks migrate and then psql \"$CHUNKS_DSN\"", start)
	}
	input, want := pgtest.Transcript(blocks[1])
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "typed.sql"), []byte(input), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newGuideShell(t, shellEnv("PSQLRC=/dev/null"), dir) // a psqlrc of the machine's would change the output
	s.data(readerExport(guideDatabase(t)) + "\n" + start[0])
	r := s.run(start[1] + " < typed.sql 2>&1") // one file: results and errors in their order
	s.close()
	if got := pgtest.TrimLines(r.stdout); r.code != 0 || got != want {
		t.Errorf("the session (exit %d):\n--- got\n%s\n--- docs\n%s", r.code, got, want)
	}
}

// docs/installing-and-upgrading.md, from the repository's root: chunks
// migrate (the demo's `export CHUNKS_DSN=...` pasted), the tern CLI over
// the same schema (either tool upgrades what the other installed), then,
// with an operator and a viewer granted as docs/roles.md has them, the
// uninstall: the schema is gone and each role holds nothing of it, so DROP
// ROLE works.
func TestInstallingGuide(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("psql")
	pgtest.RequireTool(t, err, "psql (docs/installing-and-upgrading.md uses it)", "postgresql-client")
	blocks := pgtest.WantDocBlocks(t, 3, "migrate, tern, uninstall", "<!-- tests TestInstallingGuide ", "installing-and-upgrading.md")
	dsn := guideDatabase(t)
	s := newGuideShell(t, shellEnv("GOPROXY=off"), pgtest.ModuleRoot(t)) // tern is in the module cache: no network
	s.data(pasteDemoExport(t, blocks[0], dsn))
	s.data(blocks[1])
	wantGuideLeft(t, dsn, `select format('%s %s', (select max(version) from lab.schema_version),
	    (select count(distinct proname) from pg_proc where pronamespace = 'lab'::regnamespace and proname in ('register', 'run_chunk', 'campaign_report')))`, fmt.Sprintf("%d 3", driver.SchemaVersion()))

	alice, grafana := pgtest.NewRole(t, pgtest.DSN(), "alice"), pgtest.NewRole(t, pgtest.DSN(), "grafana")
	s.data("chunks --schema lab grant --operator " + alice.Name + " --viewer " + grafana.Name)
	ours := strings.NewReplacer("alice", alice.Name, "grafana", grafana.Name)
	if ran := s.walk(ours.Replace(blocks[2]), func(s string) string { return s }); ran != 2 {
		t.Errorf("ran %d lines of the uninstall, want 2", ran)
	}
	s.close()
	wantGuideLeft(t, dsn, "select count(*)::text from pg_namespace where nspname = 'lab'", "0")
	conn := pgtest.Connect(t, dsn)
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tx.Rollback(t.Context()); err != nil {
			t.Errorf("rollback: %v", err)
		}
	}()
	for _, r := range []pgtest.Role{alice, grafana} {
		if _, err := tx.Exec(t.Context(), "drop role "+pgx.Identifier{r.Name}.Sanitize()); err != nil {
			t.Errorf("drop role %s after the uninstall: %v", r.Name, err)
		}
	}
}

// replayGuide replays docs/<guide>'s two blocks marked "<!-- tests <test>"
// (data, session) on a fresh database and returns its DSN; the session
// must have lines lines.
func replayGuide(t *testing.T, guide, test string, lines int) string {
	t.Helper()
	_, err := exec.LookPath("psql")
	pgtest.RequireTool(t, err, "psql (docs/"+guide+" uses it)", "postgresql-client")
	blocks := pgtest.WantDocBlocks(t, 2, "data, session", "<!-- tests "+test+" ", guide)
	dsn := guideDatabase(t)
	s := newGuideShell(t, shellEnv(), t.TempDir())
	s.data(pasteDemoExport(t, blocks[0], dsn))
	if ran := s.walk(blocks[1], func(s string) string { return s }); ran != lines {
		t.Errorf("ran %d lines of the session, want %d", ran, lines)
	}
	s.close()
	return dsn
}

// wantGuideLeft fails unless query, on the guide's database dsn, gives want.
func wantGuideLeft(t *testing.T, dsn, query, want string) {
	t.Helper()
	var got string
	if err := pgtest.Connect(t, dsn).QueryRow(t.Context(), query).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("after the session, %s\ngives %s, want %s", query, got, want)
	}
}
