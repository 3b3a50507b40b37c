package tests

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// nameRule is the message every function gives for a bad job_id or tenant.
const nameRule = "must be 1 to 64 ASCII letters, digits, _ or -"

// long64 is a valid name of exactly 64 characters, using every allowed class.
var long64 = "Az09_-" + strings.Repeat("x", 58)

// pgCode is the SQLSTATE of err, or "" when err is not a server error.
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// refuse runs sql (which returns one value) on the schema's connection and
// fails unless it raises exactly code and msg and leaves orders, jobs and
// job_audit exactly as they were.
func refuse(t testing.TB, s *pgtest.Schema, code, msg, sql string, args ...any) {
	t.Helper()
	before := state(t, s)
	got, err := pgtest.TryString(s.Conn, sql, args...)
	if err == nil {
		t.Fatalf("%s %v: want SQLSTATE %s %q, got result %s", sql, args, code, msg, got)
	}
	pgtest.WantPgError(t, err, code, msg)
	if after := state(t, s); after != before {
		t.Fatalf("%s %v: refused, but the data changed:\nbefore %s\n after %s", sql, args, before, after)
	}
}

// unchanged fails unless the schema's data is still before.
func unchanged(t testing.TB, s *pgtest.Schema, what, before string) {
	t.Helper()
	if after := state(t, s); after != before {
		t.Fatalf("%s changed the data:\nbefore %s\n after %s", what, before, after)
	}
}

// entry is one target as JSON text; each value is raw JSON text, and "" leaves
// that key out.
func entry(id, revision, qty string) string {
	var parts []string
	for _, kv := range [][2]string{{"id", id}, {"revision", revision}, {"qty", qty}} {
		if kv[1] != "" {
			parts = append(parts, fmt.Sprintf("%q: %s", kv[0], kv[1]))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// list is a JSON array of the given raw JSON values.
func list(values ...string) string { return "[" + strings.Join(values, ", ") + "]" }

// planKeys is the order in which planWith writes the keys of a plan.
var planKeys = []string{"job_id", "tenant", "targets", "chunk_size", "allow_partial"}

// planWith is a valid plan for job "v" of tenant "acme" (targets 1 and 2,
// revision 3, qty 2, chunk_size 2) as JSON text, with the raw JSON values of
// set replacing or adding keys; a value of "" leaves that key out.
func planWith(set map[string]string) string {
	values := map[string]string{
		"job_id":        `"v"`,
		"tenant":        `"acme"`,
		"targets":       list(entry("1", "3", "2"), entry("2", "3", "2")),
		"chunk_size":    "2",
		"allow_partial": "true",
	}
	keys := append([]string(nil), planKeys...)
	for k, v := range set {
		if _, ok := values[k]; !ok {
			keys = append(keys, k)
		}
		values[k] = v
	}
	var parts []string
	for _, k := range keys {
		if values[k] != "" {
			parts = append(parts, fmt.Sprintf("%q: %s", k, values[k]))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// ordersOf is the orders of ids first..last as [[id, tenant, qty, state, revision], ...].
func ordersOf(t testing.TB, s *pgtest.Schema, first, last int) string {
	t.Helper()
	return pgtest.MustString(t, s.Conn, `select coalesce(jsonb_agg(jsonb_build_array(o.id, o.tenant, o.qty, o.state, o.revision)
	  order by o.id), '[]')::text from orders o where o.id between $1 and $2`, first, last)
}

// auditOf is the audit of job as [[ordinal, id, previous_revision, new_revision, qty], ...].
func auditOf(t testing.TB, s *pgtest.Schema, jobID string) string {
	t.Helper()
	return pgtest.MustString(t, s.Conn, `select coalesce(jsonb_agg(jsonb_build_array(a.ordinal, a.id, a.previous_revision,
	  a.new_revision, a.qty) order by a.ordinal), '[]')::text from job_audit a where a.job_id = $1`, jobID)
}

// wantAudit is the audit of targets id first.. (revision 3, qty 2) for ordinals 0..n-1.
func wantAudit(first, n int) string {
	rows := make([]string, n)
	for i := range rows {
		rows[i] = fmt.Sprintf("[%d, %d, 3, 4, 2]", i, first+i)
	}
	return list(rows...)
}

// ids is the JSON list first..last.
func ids(first, last int) string {
	var parts []string
	for id := first; id <= last; id++ {
		parts = append(parts, fmt.Sprint(id))
	}
	return list(parts...)
}

// emptyTables empties the schema's tables, so that cases sharing one schema each
// start from nothing (a new schema costs a migration).
func emptyTables(t testing.TB, s *pgtest.Schema) {
	t.Helper()
	s.Exec(t, "delete from job_audit")
	s.Exec(t, "delete from jobs")
	s.Exec(t, "delete from orders")
}
