package tests

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Every lookup of a chunk and of a fleet pass is by key, and stays by key
// in a session that planned it while the tables were nearly empty. A
// session plans each statement once (run_chunk forces generic plans), so a
// plan made then would otherwise stay a sequential scan while the tables
// grow: a worker started on a new schema cost 2 to 5 ms more per chunk
// after 30,000 audit rows (BENCHMARKS.md). No timing here: the server's
// own count of the transaction's sequential scans says which plans ran.
func TestSQLPlansStayOnIndexesAfterTinyTables(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	// Statistics of empty tables, as on a new schema or an idle fleet whose
	// queue autovacuum has just emptied.
	s.Exec(t, "vacuum analyze orders, jobs, job_audit, job_queue, job_kind, campaign_jobs")

	// seqScans runs sql in a transaction on conn and returns the tables of
	// this schema it read by a sequential scan, with how often; "{}" for
	// none.
	seqScans := func(t *testing.T, conn *pgx.Conn, sql string) string {
		t.Helper()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		var scans string
		if err := tx.QueryRow(ctx, `select coalesce(jsonb_object_agg(relname, seq_scan), '{}')::text
			from pg_stat_xact_user_tables where schemaname = $1 and seq_scan > 0`, s.Name).Scan(&scans); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return scans
	}

	// A worker's session: its first pass finds the queue empty and plans
	// the head of the queue then. Later passes reuse that plan, and the
	// first chunk plans run_chunk's statements on one-row tables.
	worker := pgtest.Connect(t, s.DSN)
	if got := seqScans(t, worker, "select run_next_chunk('w')"); got != "{}" {
		t.Fatalf("the pass on an empty queue scanned %s sequentially", got)
	}
	registerJob(t, s, "a", "acme", 1, 25, 10)
	registerJob(t, s, "b", "acme", 101, 5, 5)
	for i := range 4 { // a's three chunks and b's one, in turn
		if got := seqScans(t, worker, "select run_next_chunk('w')"); got != "{}" {
			t.Fatalf("pass %d scanned %s sequentially", i+1, got)
		}
	}
	if got := pgtest.MustString(t, s.Conn, "select count(*)::text from job_queue"); got != "0" {
		t.Fatalf("queue rows after the passes: %s, want 0", got)
	}

	// RunChunk's session: run_chunk alone, first called on small tables.
	registerJob(t, s, "c", "acme", 201, 12, 10)
	runner := pgtest.Connect(t, s.DSN)
	for i := range 2 {
		if got := seqScans(t, runner, "select run_chunk('c')"); got != "{}" {
			t.Fatalf("run_chunk %d scanned %s sequentially", i+1, got)
		}
	}
	// And the session's own setting is untouched.
	if got := pgtest.MustString(t, runner, "select current_setting('enable_seqscan')"); got != "on" {
		t.Fatalf("enable_seqscan after run_chunk: %s, want on", got)
	}
}
