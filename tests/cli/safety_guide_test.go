package cli

import (
	"os/exec"
	"testing"

	"github.com/chunks-dev/chunks/internal/pgtest"
)

// docs/safety.md works as a reader types it, on a fresh database: its data
// block (the demo's `export CHUNKS_DSN=...` pasted), then its session in the
// same shell: the preflight, the canary (pause --after 1, a worker started
// with &, the report of its one chunk), resume, the undo run by the same
// worker, and the worker stopped by the guide's own kill, exiting 0.
func TestSafetyGuide(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("psql")
	pgtest.RequireTool(t, err, "psql (docs/safety.md uses it)", "postgresql-client")
	blocks := pgtest.WantDocBlocks(t, 2, "data, session", "<!-- tests TestSafetyGuide", "safety.md")
	dsn := guideDatabase(t)
	s := newGuideShell(t, shellEnv(), t.TempDir())
	s.data(pasteDemoExport(t, blocks[0], dsn))
	if ran := s.walk(blocks[1], func(s string) string { return s }); ran != 11 {
		t.Errorf("ran %d guide command lines, want 11", ran)
	}
	s.close()
	var got string
	if err := pgtest.Connect(t, dsn).QueryRow(t.Context(), `select format('%s %s %s', count(*) filter (where state = 'pending' and revision = 2),
	    (select count(*) from lab.job_audit where job_id = 'hooli-q3'), (select count(*) from lab.job_audit where job_id = 'hooli-q3-undo'))
	  from lab.orders where tenant = 'hooli'`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "40 40 40" {
		t.Errorf("orders pending again at revision 2, audit rows of the job and of its undo: %s, want 40 40 40", got)
	}
}
