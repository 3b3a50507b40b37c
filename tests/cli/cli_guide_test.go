package cli

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/pgtest"
)

// docs/cli-guide.md's walk works as typed: its data block (40 orders and
// items.json, made by psql) on this test's schema, then every line of the
// walk by sh, each printing what its comment says.
func TestCLIGuide(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("psql"); err != nil {
		cannotRun(t, "psql is not installed (Debian package postgresql-client)")
	}
	blocks := pgtest.WantDocBlocks(t, 2, "data, walk", "<!-- tests TestCLIGuide", "cli-guide.md")
	l := newLab(t)
	dir := t.TempDir()
	env := shellEnv("CHUNKS_DSN="+l.ChunksDSN, "CHUNKS_SCHEMA="+l.Name)
	data, export, ok := strings.Cut(blocks[0], "\n")
	if !ok || !strings.HasPrefix(data, "export CHUNKS_DSN=") {
		t.Fatalf("the data block does not start with export CHUNKS_DSN=...: %q", blocks[0])
	}
	cmd := exec.Command("sh", "-e", "-c", strings.ReplaceAll(export, " lab.", " "+l.Name+"."))
	cmd.Env, cmd.Dir = env, dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the data block: %v\n%s", err, out)
	}
	if ran := runGuideLines(t, blocks[1], env, dir, func(s string) string { return s }); ran != 11 {
		t.Errorf("ran %d guide command lines, want 11", ran)
	}
	var pending int
	if err := l.Conn.QueryRow(t.Context(), "select count(*) from "+l.Name+".orders where state = 'pending'").Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != 40 {
		t.Errorf("after the undo, %d orders pending, want 40", pending)
	}
}
