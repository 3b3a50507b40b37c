package tests

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestProductionQueueVacuum runs the queue's autovacuum settings of
// docs/production.md ("Vacuum the queue") on a schema of its own, as its
// owner, and reads them back from the catalog.
func TestProductionQueueVacuum(t *testing.T) {
	t.Parallel()
	block := pgtest.WantDocBlocks(t, 1, "the queue's autovacuum settings", "<!-- tests TestProductionQueueVacuum", "production.md")[0]
	s := pgtest.NewSchema(t)
	s.Exec(t, strings.ReplaceAll(block, "lab.job_queue", pgx.Identifier{s.Name, "job_queue"}.Sanitize()))
	sameJSON(t, "job_queue's reloptions", pgtest.MustString(t, s.Conn, "select to_jsonb(reloptions)::text from pg_class where oid = 'job_queue'::regclass"),
		`["autovacuum_vacuum_scale_factor=0", "autovacuum_vacuum_threshold=1000", "autovacuum_vacuum_cost_delay=0"]`)
}
