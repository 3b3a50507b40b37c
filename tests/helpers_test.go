package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

var ctx = context.Background()

// plan is a register plan as jsonb text for tenant with targets
// id = first..first+n-1, revision = 3, qty = 2.
func plan(jobID, tenant string, first, n, chunkSize int) string {
	return fmt.Sprintf(`{"job_id": %q, "tenant": %q, "targets": %s, "chunk_size": %d, "allow_partial": true}`,
		jobID, tenant, targets(first, n), chunkSize)
}

func targets(first, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"id": %d, "revision": 3, "qty": 2}`, first+i)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// seedOrders inserts pending orders first..first+n-1 of tenant with revision 3, qty 2.
func seedOrders(t testing.TB, s *pgtest.Schema, tenant string, first, n int) {
	t.Helper()
	s.Exec(t, `insert into orders(id, tenant, qty, state, revision)
	           select g, $1, 2, 'pending', 3 from generate_series($2::int, $3::int) g`, tenant, first, first+n-1)
}

// registerJob seeds n orders and registers their job.
func registerJob(t testing.TB, s *pgtest.Schema, jobID, tenant string, first, n, chunkSize int) {
	t.Helper()
	seedOrders(t, s, tenant, first, n)
	var created bool
	if err := s.Conn.QueryRow(ctx, "select register($1)", plan(jobID, tenant, first, n, chunkSize)).Scan(&created); err != nil {
		t.Fatalf("register %s: %v", jobID, err)
	}
	if !created {
		t.Fatalf("register %s: got false for a new job", jobID)
	}
}

// queryString returns the single text value of sql.
func queryString(t testing.TB, s *pgtest.Schema, sql string, args ...any) string {
	t.Helper()
	var v *string
	if err := s.Conn.QueryRow(ctx, sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if v == nil {
		return "<null>"
	}
	return *v
}

// sameJSON fails unless got and want are the same JSON value.
func sameJSON(t testing.TB, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: got is not JSON: %q", what, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want is not JSON: %q", what, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// state is a snapshot of everything chunks writes, to prove that nothing changed.
func state(t testing.TB, s *pgtest.Schema) string {
	t.Helper()
	return queryString(t, s, `select jsonb_build_object(
	  'orders', (select coalesce(jsonb_agg(o order by o.id), '[]') from orders o),
	  'jobs', (select coalesce(jsonb_agg(j order by j.job_id), '[]') from jobs j),
	  'audit', (select coalesce(jsonb_agg(a order by a.job_id, a.ordinal), '[]') from job_audit a))::text`)
}
