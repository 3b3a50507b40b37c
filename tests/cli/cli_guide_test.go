package cli

import (
	"os/exec"
	"testing"

	"github.com/chunks-dev/chunks/internal/pgtest"
)

// docs/cli-guide.md works as a reader types it, on a fresh database: its
// data block with its first line replaced by the demo's `export
// CHUNKS_DSN=...` (so the block must set $CHUNKS_SCHEMA itself), then every
// line of the walk in the same shell, each printing what its comment says.
// The walk ends with the undo drained: the 40 orders are pending again.
func TestCLIGuide(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("psql")
	pgtest.RequireTool(t, err, "psql (docs/cli-guide.md uses it)", "postgresql-client")
	blocks := pgtest.WantDocBlocks(t, 2, "data, walk", "<!-- tests TestCLIGuide", "cli-guide.md")
	dsn := guideDatabase(t)
	s := newGuideShell(t, shellEnv(), t.TempDir())
	s.data(pasteDemoExport(t, blocks[0], dsn))
	if ran := s.walk(blocks[1], func(s string) string { return s }); ran != 11 {
		t.Errorf("ran %d guide command lines, want 11", ran)
	}
	s.close()
	var pending int
	if err := pgtest.Connect(t, dsn).QueryRow(t.Context(), "select count(*) from lab.orders where state = 'pending'").Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != 40 {
		t.Errorf("after the undo, %d orders pending, want 40", pending)
	}
}
