package cli

import (
	"os/exec"
	"testing"

	"github.com/chunks-dev/chunks/internal/pgtest"
)

// docs/fleet.md works as a reader types it, on a fresh database: its data
// block (the demo's `export CHUNKS_DSN=...` pasted), then its session in the
// same shell: a worker started with &, the job paused and resumed under it,
// finished, and the worker stopped by the guide's own kill, exiting 0.
func TestFleetGuide(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("psql")
	pgtest.RequireTool(t, err, "psql (docs/fleet.md uses it)", "postgresql-client")
	blocks := pgtest.WantDocBlocks(t, 2, "data, session", "<!-- tests TestFleetGuide", "fleet.md")
	dsn := guideDatabase(t)
	s := newGuideShell(t, shellEnv(), t.TempDir())
	s.data(pasteDemoExport(t, blocks[0], dsn))
	if ran := s.walk(blocks[1], func(s string) string { return s }); ran != 7 {
		t.Errorf("ran %d guide command lines, want 7", ran)
	}
	s.close()
	var got string
	if err := pgtest.Connect(t, dsn).QueryRow(t.Context(), `select format('%s %s', count(*) filter (where state = 'cancelled'),
	    (select count(*) from lab.job_audit where job_id = 'umbrella-recall')) from lab.orders where tenant = 'umbrella'`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "20 20" {
		t.Errorf("cancelled orders and audit rows: %s, want 20 20", got)
	}
}
