package tests

import (
	"fmt"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestChangeChunkReadsOnlyItsRows: a chunk of a declared change, its undo's
// and its check read the user's table by the chunk's keys through its
// index, never a scan of the whole table. Counted by the transaction's own
// statistics (pg_stat_xact_user_tables) on a table of 5,000 rows: a
// chunk's one statement (the update whose WHERE is the check, its before
// values read by ctid, which idx_tup_fetch does not count) fetches the
// chunk's rows by its keys once each, and a scan of the table would fetch
// thousands.
func TestChangeChunkReadsOnlyItsRows(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, `create table %[1]s.tickets(id integer primary key, qty integer not null,
	  state text not null, revision integer not null)`)
	tickets := shop + ".tickets"
	s.Exec(t, "insert into "+tickets+" select g, 2, 'pending', 3 from generate_series(1, 5000) g")
	s.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": "cancel_ticket", "table": "%s", "key": "id",
	  "version": "revision", "expect": ["qty"], "set": {"state": "cancelled"}}`, tickets))
	for _, size := range []int{1, 10} {
		s.Exec(t, `select register_change('cancel_ticket', jsonb_build_object('job_id', 'j' || $1::int, 'tenant', 'acme',
		  'chunk_size', $1::int, 'allow_partial', true,
		  'targets', (select jsonb_agg(jsonb_build_object('id', $1::int * 100 + i, 'revision', 3, 'qty', 2)) from generate_series(1, 64) i)))`, size)
	}
	s.Exec(t, "analyze "+tickets)
	// What one statement read of the table: sequential scans, and rows fetched by index scans
	// (the number of index scans is left out: PostgreSQL 17 makes one of a whole = any list).
	reads := func(what, sql string) string {
		t.Helper()
		tx, err := s.Conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := tx.Rollback(ctx); err != nil {
				t.Errorf("rollback: %v", err)
			}
		}()
		// The backend's counts not yet flushed include earlier
		// transactions' (PostgreSQL 15+): the difference is this statement's.
		count := func() (n [2]int64) {
			t.Helper()
			if err := tx.QueryRow(ctx, `select seq_scan, idx_tup_fetch from pg_stat_xact_user_tables where relid = $1::regclass`,
				tickets).Scan(&n[0], &n[1]); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			return n
		}
		before := count()
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		after := count()
		return fmt.Sprintf("seq_scan %d, idx_tup_fetch %d", after[0]-before[0], after[1]-before[1])
	}
	for _, c := range []struct{ what, sql, want string }{
		{"a chunk of 1", "select run_chunk('j1')", "seq_scan 0, idx_tup_fetch 1"},
		{"a chunk of 10", "select run_chunk('j10')", "seq_scan 0, idx_tup_fetch 10"},
		{"check_change of 64", `select check_change('cancel_ticket', jsonb_build_object('job_id', 'c', 'tenant', 'acme',
		  'chunk_size', 10, 'allow_partial', true,
		  'targets', (select jsonb_agg(jsonb_build_object('id', 4000 + i, 'revision', 3, 'qty', 2)) from generate_series(1, 64) i)))`,
			"seq_scan 0, idx_tup_fetch 64"},
	} {
		if got := reads(c.what, c.sql); got != c.want {
			t.Errorf("%s read %s of %s, want %s", c.what, got, tickets, c.want)
		}
	}
	// An undo's chunk reads the same way.
	s.Exec(t, "select run_chunk('j10')")
	s.Exec(t, "select pause_job('j10')")
	s.Exec(t, "select register_undo('j10', 'u10')")
	if got := reads("an undo's chunk of 10", "select run_chunk('u10')"); got != "seq_scan 0, idx_tup_fetch 10" {
		t.Errorf("an undo's chunk of 10 read %s of %s, want seq_scan 0, idx_tup_fetch 10", got, tickets)
	}
}
