package tests

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// docs/contract.md §5 report at the SQL face.

func TestSQLReport(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 25, 10)
	// Another job's orders and progress never show in this report.
	registerJob(t, s, "other-job", "acme", 100, 5, 2)
	s.Exec(t, "select run_chunk('other-job')")

	report := func(t *testing.T, want string) {
		t.Helper()
		before := state(t, s)
		sameJSON(t, "report", pgtest.MustString(t, s.Conn, "select report($1)::text", "j"), want)
		unchanged(t, s, "report", before)
	}

	t.Run("unknown job", func(t *testing.T) {
		refuse(t, s, "CH409", "job nope: not found", "select report($1)::text", "nope")
	})

	t.Run("before any chunk", func(t *testing.T) {
		report(t, `{"approved": `+ids(1, 25)+`, "committed": [], "remaining": `+ids(1, 25)+`,
		  "matching": [], "drifted": [], "missing": []}`)
	})

	t.Run("remaining orders are not judged", func(t *testing.T) {
		// Before its chunk runs, an order changed by someone else is neither
		// drifted nor missing: only committed targets are judged.
		s.Exec(t, "update orders set state = 'paid', revision = revision + 1 where id = 25")
		report(t, `{"approved": `+ids(1, 25)+`, "committed": [], "remaining": `+ids(1, 25)+`,
		  "matching": [], "drifted": [], "missing": []}`)
		s.Exec(t, "update orders set state = 'pending', revision = 3 where id = 25") // undo, for the chunks below
	})

	t.Run("partial progress", func(t *testing.T) {
		s.Exec(t, "select run_chunk('j')")
		report(t, `{"approved": `+ids(1, 25)+`, "committed": `+ids(1, 10)+`, "remaining": `+ids(11, 25)+`,
		  "matching": `+ids(1, 10)+`, "drifted": [], "missing": []}`)
	})

	t.Run("matching, drifted and missing", func(t *testing.T) {
		s.Exec(t, "select run_chunk('j')")
		s.Exec(t, "update orders set qty = 5, revision = revision + 1 where id = 2")           // qty changed
		s.Exec(t, "update orders set state = 'pending', revision = revision + 1 where id = 3") // cancelled back to pending
		s.Exec(t, "update orders set tenant = 'other', revision = revision + 1 where id = 4")  // tenant changed
		s.Exec(t, "update orders set revision = revision + 1 where id = 5")                    // revision bumped
		s.Exec(t, "update orders set state = 'paid', revision = revision + 1 where id = 12")   // paid after cancel
		s.Exec(t, "update orders set qty = 7, revision = revision + 1 where id = 13")          // changed...
		s.Exec(t, "update orders set qty = 2, revision = revision + 1 where id = 13")          // ...and back: still drifted
		s.Exec(t, "update orders set revision = revision - 1 where id = 14")                   // revision below the job's
		s.Exec(t, "delete from orders where id in (6, 15)")                                    // deleted
		s.Exec(t, "insert into orders values (1006, 'acme', 2, 'cancelled', 4)")               // same values as 6 was
		s.Exec(t, "update orders set id = 1007 where id = 7")                                  // renumbered
		s.Exec(t, "update orders set qty = 9, revision = revision + 1 where id = 22")          // remaining: not judged
		report(t, `{"approved": `+ids(1, 25)+`, "committed": `+ids(1, 20)+`, "remaining": `+ids(21, 25)+`,
		  "matching": [1, 8, 9, 10, 11, 16, 17, 18, 19, 20],
		  "drifted": [2, 3, 4, 5, 12, 13, 14], "missing": [6, 7, 15]}`)
	})

	t.Run("an order with the same values under another id never stands in", func(t *testing.T) {
		// 1006 has every value order 6 would have, 1007 is order 7 renumbered,
		// and 16 looks exactly as 15 should: 6, 7 and 15 are still missing.
		sameJSON(t, "orders", ordersOf(t, s, 1006, 1007), `[[1006, "acme", 2, "cancelled", 4], [1007, "acme", 2, "cancelled", 4]]`)
		sameJSON(t, "orders", ordersOf(t, s, 15, 16), `[[16, "acme", 2, "cancelled", 4]]`)
		// Putting order 7 back under its own id makes it matching again.
		s.Exec(t, "update orders set id = 7 where id = 1007")
		report(t, `{"approved": `+ids(1, 25)+`, "committed": `+ids(1, 20)+`, "remaining": `+ids(21, 25)+`,
		  "matching": [1, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20],
		  "drifted": [2, 3, 4, 5, 12, 13, 14], "missing": [6, 15]}`)
	})

	t.Run("the end", func(t *testing.T) {
		s.Exec(t, "update orders set qty = 2, revision = 3 where id = 22")
		sameJSON(t, "last chunk", pgtest.MustString(t, s.Conn, "select run_chunk('j')::text"),
			`{"processed": [21, 22, 23, 24, 25], "next_index": 25, "done": true}`)
		report(t, `{"approved": `+ids(1, 25)+`, "committed": `+ids(1, 25)+`, "remaining": [],
		  "matching": [1, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25],
		  "drifted": [2, 3, 4, 5, 12, 13, 14], "missing": [6, 15]}`)
	})

	t.Run("report of the other job", func(t *testing.T) {
		sameJSON(t, "report", pgtest.MustString(t, s.Conn, "select report($1)::text", "other-job"),
			`{"approved": [100, 101, 102, 103, 104], "committed": [100, 101], "remaining": [102, 103, 104],
			  "matching": [100, 101], "drifted": [], "missing": []}`)
	})
}

// The matching rule uses the job's tenant, qty and revision, not any other
// job's: two jobs with different approved values for their own orders.
func TestSQLReportUsesApprovedValues(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	s.Exec(t, `insert into orders values (1, 'acme', 4, 'pending', 0), (2, 'acme', 1000, 'pending', 9),
	  (3, 'acme', 1, 'pending', 2147483646)`)
	if got := pgtest.MustString(t, s.Conn, "select register($1)::text", `{"job_id": "j", "tenant": "acme", "chunk_size": 10,
	  "allow_partial": true, "targets": [{"id": 3, "revision": 2147483646, "qty": 1}, {"id": 1, "revision": 0, "qty": 4},
	  {"id": 2, "revision": 9, "qty": 1000}]}`); got != "true" {
		t.Fatalf("register: %s", got)
	}
	sameJSON(t, "run_chunk", pgtest.MustString(t, s.Conn, "select run_chunk('j')::text"),
		`{"processed": [1, 2, 3], "next_index": 3, "done": true}`)
	sameJSON(t, "audit", auditOf(t, s, "j"), `[[0, 1, 0, 1, 4], [1, 2, 9, 10, 1000], [2, 3, 2147483646, 2147483647, 1]]`)
	sameJSON(t, "report", pgtest.MustString(t, s.Conn, "select report('j')::text"),
		`{"approved": [1, 2, 3], "committed": [1, 2, 3], "remaining": [], "matching": [1, 2, 3], "drifted": [], "missing": []}`)
	s.Exec(t, "update orders set qty = 2, revision = revision + 1 where id = 1")
	s.Exec(t, "update orders set tenant = 'acme2' where id = 3")
	sameJSON(t, "report", pgtest.MustString(t, s.Conn, "select report('j')::text"),
		`{"approved": [1, 2, 3], "committed": [1, 2, 3], "remaining": [], "matching": [2], "drifted": [1, 3], "missing": []}`)
}

// A stored job that cannot be read as approvals and a committed prefix is a
// conflict for report too, never a wrong list or a jsonb error.
func TestSQLReportCorruptJob(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, tamper, msg string
	}{
		{"a fraction in targets", `update jobs set targets = jsonb_set(targets, '{1,id}', '1.5')`,
			"job j: stored targets[1].id: must be an integer, got 1.5"},
		{"targets not a list", `update jobs set targets = '{"id": 1}'`,
			"job j: stored targets is not a list of 1 to 64 targets"},
		{"next_index beyond the targets", `update jobs set next_index = 7`,
			"job j: next_index 7 is beyond the 3 targets"},
		// report judges each committed target by its audit row, so the audit
		// must be exactly targets[0:next_index], as run_chunk proves it.
		{"an audit row missing", `select run_chunk('j'); delete from job_audit where ordinal = 0`,
			"job j: audit row 0 is missing (next_index is 1)"},
		{"an audit row of another order", `select run_chunk('j'); update job_audit set id = 3 where ordinal = 0`,
			"job j: audit row 0 is (id 3, revision 3 -> 4, qty 2), approved (id 1, revision 3 -> 4, qty 2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := pgtest.NewSchema(t)
			registerJob(t, s, "j", "acme", 1, 3, 1)
			s.Exec(t, tc.tamper)
			refuse(t, s, "CH409", tc.msg, "select report('j')")
		})
	}
}
