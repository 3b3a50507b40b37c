package bench

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// counters are the server's own counts of commits (pg_stat_database for
// this database) and of WAL fsyncs (pg_stat_wal, PostgreSQL 14 and later;
// -1 before), and the WAL position in bytes (pg_current_wal_lsn).
type counters struct {
	commits, walSyncs, walBytes int64
}

// readCounters reads the counters once they have settled. Backends report
// their counts when they go idle (at most once a second) or exit, so it
// reads until two reads 200 ms apart agree, for at most 3 s.
func readCounters(ctx context.Context, conn *pgx.Conn) (counters, error) {
	const q = `select (select xact_commit from pg_stat_database where datname = current_database()),
	                  case when current_setting('server_version_num')::int >= 140000
	                       then (select (to_jsonb(w) ->> 'wal_sync')::bigint from pg_stat_wal as w) else -1 end,
	                  pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`
	var last counters
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; ; i++ {
		var c counters
		if _, err := conn.Exec(ctx, "select pg_stat_clear_snapshot()"); err != nil {
			return c, err
		}
		if err := conn.QueryRow(ctx, q).Scan(&c.commits, &c.walSyncs, &c.walBytes); err != nil {
			return c, err
		}
		// Each read is two transactions of its own: allow for them.
		if i > 0 && c.commits-last.commits <= 2 && c.walSyncs == last.walSyncs || time.Now().After(deadline) {
			return c, nil
		}
		last = c
		time.Sleep(200 * time.Millisecond)
	}
}

// perChunk sets r's commits, WAL fsyncs and WAL bytes per chunk from the
// counters before and after its run. The WAL is the whole server's: the
// bench's own polling writes none, but anything else on the server counts.
func perChunk(r *Result, before, after counters) {
	if r.Chunks == 0 {
		return
	}
	r.CommitsPerChunk = float64(after.commits-before.commits-int64(r.ownTxs)) / float64(r.Chunks)
	if before.walSyncs >= 0 {
		r.WALSyncsPerChunk = float64(after.walSyncs-before.walSyncs) / float64(r.Chunks)
	}
	r.WALBytesPerChunk = float64(after.walBytes-before.walBytes) / float64(r.Chunks)
}
