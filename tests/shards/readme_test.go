package shards

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// docs/beyond-one-server.md works as written, on one server with
// three databases as it says: its set-up block (chunks migrate on two
// shards, chunks router install, the orders), its psql session through the
// router, replayed through psql with the output compared line by line, and
// its CLI block (drain, report and status through the router).
func TestREADMERouter(t *testing.T) {
	t.Parallel()
	requirePlproxy(t)
	_, err := exec.LookPath("psql")
	pgtest.RequireTool(t, err, "psql", "postgresql-client")
	blocks := pgtest.WantDocBlocks(t, 3, "set-up, session, CLI", "<!-- tests/shards TestREADMERouter", "beyond-one-server.md")
	setup, session, cliBlock := blocks[0], blocks[1], blocks[2]

	dsn := routerServer.DSN() // key=value, like the demo's export CHUNKS_DSN=... line
	t.Cleanup(func() {
		if err := pgtest.WithConn(dsn, func(conn *pgx.Conn) error {
			for _, db := range []string{"router", "shard0", "shard1"} {
				if _, err := conn.Exec(ctx, "drop database if exists "+db+" with (force)"); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Errorf("drop the guide's databases: %v", err)
		}
	})
	env := append(pgtest.CleanEnv(), "CHUNKS_DSN="+dsn, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	sh := func(block string, env []string) string {
		t.Helper()
		cmd := exec.Command("sh", "-e", "-c", block)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sh -e: %v\n--- the block:\n%s\n--- its output:\n%s", err, block, out)
		}
		return string(out)
	}
	sh(setup, env)

	input, want := pgtest.Transcript(session)
	cmd := exec.Command("psql", "-X", dsn+" dbname=router")
	cmd.Env = pgtest.CleanEnv()
	cmd.Stdin = strings.NewReader(input)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out // one pipe: psql's results and errors in their order
	if err := cmd.Run(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out.String())
	}
	if got := pgtest.TrimLines(out.String()); got != want {
		t.Errorf("the guide's session through the router:\n--- got\n%s\n--- docs\n%s", got, want)
	}

	// The reader's shell still has the set-up block's export CHUNKS_SCHEMA=lab.
	got := sh(cliBlock, append(env, "CHUNKS_SCHEMA=lab"))
	for _, line := range []string{
		"job initech-q3: 2 calls cancelled 4-5; next_index 2; the job is done",
		"job initech-q3: 2 approved, 2 committed, 0 remaining: 2 matching, 0 drifted, 0 missing",
		"2 jobs: 2 done; 0 rows drifted or missing",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("the guide's CLI block does not say %q:\n%s", line, got)
		}
	}
	if !regexp.MustCompile(`(?m)^│ p0 +│ spring-cleanup +│ cancel +│ acme +│ 3/3 +│ done `).MatchString(got) ||
		!regexp.MustCompile(`(?m)^│ p1 +│ initech-q3 +│ cancel +│ initech +│ 2/2 +│ done `).MatchString(got) {
		t.Errorf("chunks status through the router does not show both shards' jobs:\n%s", got)
	}
}
