package tests

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// docs/contract.md §5 register and inspect_job at the SQL face.

// unsortedPlan is job "fest" of tenant "acme" with four targets given out of
// id order, each with its own revision and qty, and keys in another order.
const unsortedPlan = `{"job_id": "fest", "tenant": "acme", "chunk_size": 2, "allow_partial": true, "targets": [
  {"qty": 4, "id": 30, "revision": 7},
  {"id": 10, "revision": 0, "qty": 1},
  {"revision": 5, "qty": 1000, "id": 40},
  {"id": 20, "qty": 9, "revision": 2}]}`

// sortedTargets is unsortedPlan's targets, normalized.
const sortedTargets = `[{"id": 10, "revision": 0, "qty": 1}, {"id": 20, "revision": 2, "qty": 9},
  {"id": 30, "revision": 7, "qty": 4}, {"id": 40, "revision": 5, "qty": 1000}]`

func TestSQLRegister(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	s.Exec(t, `insert into orders(id, tenant, qty, state, revision) values
	  (10, 'acme', 1, 'pending', 0), (20, 'acme', 9, 'pending', 2), (30, 'acme', 4, 'pending', 7), (40, 'acme', 1000, 'pending', 5)`)

	t.Run("inspect_job of an unknown job is NULL", func(t *testing.T) {
		before := state(t, s)
		if got := pgtest.MustString(t, s.Conn, "select inspect_job($1)::text", "fest"); got != "<null>" {
			t.Fatalf("inspect_job: got %s, want NULL", got)
		}
		unchanged(t, s, "inspect_job", before)
	})

	t.Run("a new job is true, stored sorted with next_index 0", func(t *testing.T) {
		if got := pgtest.MustString(t, s.Conn, "select register($1)::text", unsortedPlan); got != "true" {
			t.Fatalf("register: got %s, want true", got)
		}
		sameJSON(t, "jobs row", pgtest.MustString(t, s.Conn, `select jsonb_build_array(job_id, tenant, targets, chunk_size, next_index)::text
		  from jobs`), `["fest", "acme", `+sortedTargets+`, 2, 0]`)
		// The stored list is in id order, element by element (not only equal as a set).
		if got := pgtest.MustString(t, s.Conn, "select string_agg(e->>'id', ',' order by ord) from jobs, jsonb_array_elements(targets) with ordinality x(e, ord)"); got != "10,20,30,40" {
			t.Fatalf("stored ids in order: got %s", got)
		}
		if got := auditOf(t, s, "fest"); got != "[]" {
			t.Fatalf("audit after register: %s", got)
		}
		sameJSON(t, "orders", ordersOf(t, s, 0, 100), `[[10, "acme", 1, "pending", 0], [20, "acme", 9, "pending", 2],
		  [30, "acme", 4, "pending", 7], [40, "acme", 1000, "pending", 5]]`)
	})

	t.Run("inspect_job returns exactly the stored job", func(t *testing.T) {
		before := state(t, s)
		sameJSON(t, "inspect_job", pgtest.MustString(t, s.Conn, "select inspect_job($1)::text", "fest"),
			`{"job_id": "fest", "tenant": "acme", "targets": `+sortedTargets+`, "chunk_size": 2, "next_index": 0}`)
		unchanged(t, s, "inspect_job", before)
	})

	sameApproval := map[string]string{
		"the same plan": unsortedPlan,
		"targets in another order": `{"job_id": "fest", "tenant": "acme", "chunk_size": 2, "allow_partial": true, "targets": ` +
			sortedTargets + `}`,
		"jsonb numbers written differently": `{"job_id": "fest", "tenant": "acme", "chunk_size": 2e0, "allow_partial": true, "targets": [
		  {"id": 4e1, "revision": 5, "qty": 1e3}, {"id": 30, "revision": 7, "qty": 4}, {"id": 10, "revision": -0, "qty": 1},
		  {"id": 20, "revision": 2, "qty": 9}]}`,
	}
	t.Run("the same approval again is false and changes nothing", func(t *testing.T) {
		for name, plan := range sameApproval {
			before := state(t, s)
			if got := pgtest.MustString(t, s.Conn, "select register($1)::text", plan); got != "false" {
				t.Fatalf("%s: got %s, want false", name, got)
			}
			unchanged(t, s, name, before)
		}
	})

	t.Run("re-registration never resets progress", func(t *testing.T) {
		sameJSON(t, "run_chunk", pgtest.MustString(t, s.Conn, "select run_chunk('fest')::text"),
			`{"processed": [10, 20], "next_index": 2, "done": false}`)
		for name, plan := range sameApproval {
			before := state(t, s)
			if got := pgtest.MustString(t, s.Conn, "select register($1)::text", plan); got != "false" {
				t.Fatalf("%s: got %s, want false", name, got)
			}
			unchanged(t, s, name, before)
		}
		sameJSON(t, "inspect_job", pgtest.MustString(t, s.Conn, "select inspect_job($1)::text", "fest"),
			`{"job_id": "fest", "tenant": "acme", "targets": `+sortedTargets+`, "chunk_size": 2, "next_index": 2}`)
		sameJSON(t, "audit", auditOf(t, s, "fest"), `[[0, 10, 0, 1, 1], [1, 20, 2, 3, 9]]`)
		// The next chunk is the next one, not the first one again.
		sameJSON(t, "run_chunk", pgtest.MustString(t, s.Conn, "select run_chunk('fest')::text"),
			`{"processed": [30, 40], "next_index": 4, "done": true}`)
	})

	t.Run("a different job under the same id is a conflict naming the job", func(t *testing.T) {
		target := func(id, revision, qty string) string { return entry(id, revision, qty) }
		all := func(changed ...string) string {
			base := []string{target("10", "0", "1"), target("20", "2", "9"), target("30", "7", "4"), target("40", "5", "1000")}
			copy(base, changed)
			return list(base...)
		}
		plan := func(tenant, targets, chunkSize string) string {
			return planWith(map[string]string{"job_id": `"fest"`, "tenant": tenant, "targets": targets, "chunk_size": chunkSize})
		}
		cases := []struct{ name, plan, msg string }{
			{"another tenant", plan(`"other"`, all(), "2"), `job fest: already registered for tenant "acme", not "other"`},
			{"tenant in another case", plan(`"ACME"`, all(), "2"), `job fest: already registered for tenant "acme", not "ACME"`},
			{"another chunk_size", plan(`"acme"`, all(), "3"), "job fest: already registered with chunk_size 2, not 3"},
			{"a target with another revision", plan(`"acme"`, all(target("10", "1", "1")), "2"),
				"job fest: already registered with different targets"},
			{"a target with another qty", plan(`"acme"`, all(target("10", "0", "2")), "2"),
				"job fest: already registered with different targets"},
			{"a target with another id", plan(`"acme"`, all(target("11", "0", "1")), "2"),
				"job fest: already registered with different targets"},
			{"one target fewer", plan(`"acme"`, list(target("10", "0", "1"), target("20", "2", "9"), target("30", "7", "4")), "2"),
				"job fest: already registered with different targets"},
			{"one target more", plan(`"acme"`, list(target("10", "0", "1"), target("20", "2", "9"), target("30", "7", "4"),
				target("40", "5", "1000"), target("50", "0", "1")), "2"), "job fest: already registered with different targets"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				refuse(t, s, "CH409", c.msg, "select register($1)::text", c.plan)
			})
		}
	})

	t.Run("another job id is another job", func(t *testing.T) {
		if got := pgtest.MustString(t, s.Conn, "select register($1)::text",
			planWith(map[string]string{"job_id": `"fest-2"`, "tenant": `"other"`})); got != "true" {
			t.Fatalf("register fest-2: got %s, want true", got)
		}
		sameJSON(t, "inspect_job fest-2", pgtest.MustString(t, s.Conn, "select inspect_job($1)::text", "fest-2"),
			`{"job_id": "fest-2", "tenant": "other", "targets": `+targets(1, 2)+`, "chunk_size": 2, "next_index": 0}`)
		sameJSON(t, "inspect_job fest", pgtest.MustString(t, s.Conn, "select inspect_job($1)::text", "fest"),
			`{"job_id": "fest", "tenant": "acme", "targets": `+sortedTargets+`, "chunk_size": 2, "next_index": 4}`)
	})

	t.Run("job ids are case sensitive", func(t *testing.T) {
		if got := pgtest.MustString(t, s.Conn, "select inspect_job($1)::text", "FEST"); got != "<null>" {
			t.Fatalf("inspect_job FEST: got %s, want NULL", got)
		}
	})

	// Inside the caller's transaction: a registration that is rolled back
	// leaves nothing, and an uncommitted one is already a valid record for
	// inspect_job in that transaction.
	t.Run("in a transaction that rolls back", func(t *testing.T) {
		before := state(t, s)
		tx, err := s.Conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var created bool
		if err := tx.QueryRow(ctx, "select register($1)", plan("tx", "acme", 1, 3, 2)).Scan(&created); err != nil || !created {
			t.Fatalf("register in tx: %v %v", created, err)
		}
		var job string
		if err := tx.QueryRow(ctx, "select inspect_job('tx')::text").Scan(&job); err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "inspect_job in tx", job,
			`{"job_id": "tx", "tenant": "acme", "targets": `+targets(1, 3)+`, "chunk_size": 2, "next_index": 0}`)
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		unchanged(t, s, "a rolled back register", before)
		if got := pgtest.MustString(t, s.Conn, "select inspect_job('tx')::text"); got != "<null>" {
			t.Fatalf("inspect_job after rollback: %s", got)
		}
	})
}
