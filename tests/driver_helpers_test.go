package tests

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
	"github.com/chunks-dev/chunks/internal/wire"
)

// seq returns the ids first..first+n-1.
func seq(first, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(first + i)
	}
	return out
}

// goPlan is the driver.Plan of plan(jobID, tenant, first, n, chunkSize).
func goPlan(jobID, tenant string, first, n, chunkSize int) driver.Plan {
	ts := make([]driver.Target, n)
	for i := range ts {
		ts[i] = driver.Target{ID: int64(first + i), Revision: 3, Qty: 2}
	}
	return driver.Plan{JobID: jobID, Tenant: tenant, Targets: ts, ChunkSize: chunkSize, AllowPartial: true}
}

// sessionSettings reads the settings RunChunk must leave as it found them.
func sessionSettings(t testing.TB, conn *pgx.Conn) [3]string {
	t.Helper()
	var out [3]string
	if err := conn.QueryRow(ctx, "select current_setting('lock_timeout'), current_setting('statement_timeout'), current_setting('search_path')").
		Scan(&out[0], &out[1], &out[2]); err != nil {
		t.Fatalf("read settings: %v", err)
	}
	return out
}

// wantIdle fails unless conn is open with no transaction and has the given settings.
func wantIdle(t testing.TB, conn *pgx.Conn, settings [3]string) {
	t.Helper()
	if conn.IsClosed() {
		t.Fatal("connection was closed")
	}
	if st := conn.PgConn().TxStatus(); st != 'I' {
		t.Fatalf("transaction status %q, want idle", st)
	}
	if got := sessionSettings(t, conn); got != settings {
		t.Fatalf("settings %v, want %v", got, settings)
	}
}

// countingConnect opens a connection on s whose round trips can be counted.
func countingConnect(t testing.TB, s *pgtest.Schema) (*pgx.Conn, *wire.Counter) {
	t.Helper()
	return pgtest.CountingConnect(t, s.DSN)
}
