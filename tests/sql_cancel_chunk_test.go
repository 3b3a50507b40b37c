package tests

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// docs/contract.md §5 cancel_chunk at the SQL face.

func TestSQLCancelChunk(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	seedOrders(t, s, "acme", 1, 5)
	s.Exec(t, "update orders set revision = 7, qty = 9 where id = 2")
	// A job with progress: cancel_chunk must never touch jobs or job_audit.
	registerJob(t, s, "kept", "acme", 100, 4, 2)
	s.Exec(t, "select run_chunk('kept')")
	jobsBefore := pgtest.MustString(t, s.Conn, "select jsonb_agg(j order by job_id)::text from jobs j")
	auditBefore := auditOf(t, s, "kept")

	// Items out of id order: the changes come back in id order.
	got := pgtest.MustString(t, s.Conn, "select cancel_chunk($1, $2)::text", "acme",
		list(entry("3", "3", "2"), entry("1", "3", "2"), entry("2", "7", "9")))
	sameJSON(t, "changes", got, `[
	  {"id": 1, "previous_revision": 3, "new_revision": 4, "qty": 2},
	  {"id": 2, "previous_revision": 7, "new_revision": 8, "qty": 9},
	  {"id": 3, "previous_revision": 3, "new_revision": 4, "qty": 2}]`)
	// The jsonb text itself lists them in id order.
	if ids := pgtest.MustString(t, s.Conn, "select string_agg(e->>'id', ',' order by ord) from jsonb_array_elements($1::jsonb) with ordinality x(e, ord)", got); ids != "1,2,3" {
		t.Fatalf("changes in order %s, want 1,2,3", ids)
	}
	sameJSON(t, "orders", ordersOf(t, s, 1, 5), `[[1, "acme", 2, "cancelled", 4], [2, "acme", 9, "cancelled", 8],
	  [3, "acme", 2, "cancelled", 4], [4, "acme", 2, "pending", 3], [5, "acme", 2, "pending", 3]]`)
	if got := pgtest.MustString(t, s.Conn, "select jsonb_agg(j order by job_id)::text from jobs j"); got != jobsBefore {
		t.Fatalf("cancel_chunk changed jobs:\n%s\n%s", jobsBefore, got)
	}
	if got := auditOf(t, s, "kept"); got != auditBefore {
		t.Fatalf("cancel_chunk changed job_audit:\n%s\n%s", auditBefore, got)
	}
	if got := pgtest.MustString(t, s.Conn, "select count(*)::text from job_audit"); got != "2" {
		t.Fatalf("job_audit rows: %s, want 2", got)
	}

	t.Run("cancelling the same items again is a conflict", func(t *testing.T) {
		refuse(t, s, "CH409", "order 1: state is cancelled", "select cancel_chunk($1, $2)::text", "acme",
			list(entry("1", "3", "2")))
	})

	// Inside the caller's transaction cancel_chunk neither commits nor aborts
	// it; its failure undoes only its own statement (a savepoint in SQL).
	t.Run("inside the caller's transaction", func(t *testing.T) {
		seedOrders(t, s, "acme", 201, 6)
		before := state(t, s)

		t.Run("a rolled back transaction keeps nothing", func(t *testing.T) {
			tx, err := s.Conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "select cancel_chunk($1, $2)", "acme", targets(201, 3)); err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			unchanged(t, s, "cancel_chunk in a rolled back transaction", before)
		})

		t.Run("a failure rolls back to the savepoint only", func(t *testing.T) {
			tx, err := s.Conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck // after Commit this is a no-op
			if _, err := tx.Exec(ctx, "select cancel_chunk($1, $2)", "acme", targets(201, 2)); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "savepoint s"); err != nil {
				t.Fatal(err)
			}
			_, err = tx.Exec(ctx, "select cancel_chunk($1, $2)", "acme", list(entry("203", "3", "2"), entry("204", "9", "2")))
			pgtest.WantPgError(t, err, "CH409", "order 204: revision is 3, approved 9")
			if _, err := tx.Exec(ctx, "rollback to savepoint s"); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "select cancel_chunk($1, $2)", "acme", targets(205, 1)); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			sameJSON(t, "orders", ordersOf(t, s, 201, 206), `[[201, "acme", 2, "cancelled", 4], [202, "acme", 2, "cancelled", 4],
			  [203, "acme", 2, "pending", 3], [204, "acme", 2, "pending", 3], [205, "acme", 2, "cancelled", 4], [206, "acme", 2, "pending", 3]]`)
		})
	})
}

func TestSQLCancelChunkMismatch(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	seedOrders(t, s, "acme", 1, 40)
	s.Exec(t, "delete from orders where id = 3")
	s.Exec(t, "update orders set tenant = 'other' where id = 4")
	s.Exec(t, "update orders set state = 'paid' where id = 9")
	s.Exec(t, "update orders set state = 'cancelled' where id = 10")
	s.Exec(t, "update orders set revision = 5 where id = 17")
	s.Exec(t, "update orders set qty = 7 where id = 21")
	registerJob(t, s, "kept", "acme", 100, 4, 2)
	s.Exec(t, "select run_chunk('kept')")

	ok := func(id string) string { return entry(id, "3", "2") }
	cases := []struct{ name, items, msg string }{
		{"missing", list(ok("1"), ok("2"), ok("3"), ok("5"), ok("6")), "order 3: missing"},
		{"another tenant", list(ok("1"), ok("4"), ok("5")), "order 4: belongs to another tenant"},
		{"paid", list(ok("8"), ok("9"), ok("11")), "order 9: state is paid"},
		{"already cancelled", list(ok("8"), ok("10"), ok("11")), "order 10: state is cancelled"},
		{"revision", list(ok("16"), entry("17", "4", "2"), ok("18")), "order 17: revision is 5, approved 4"},
		{"revision approved higher", list(entry("16", "4", "2"), ok("18")), "order 16: revision is 3, approved 4"},
		{"qty", list(ok("20"), ok("21"), ok("22")), "order 21: qty is 7, approved 2"},
		{"qty approved differently", list(ok("20"), entry("22", "3", "5")), "order 22: qty is 2, approved 5"},
		{"a mismatch at the end", list(ok("30"), ok("31"), ok("32"), entry("33", "3", "1")), "order 33: qty is 2, approved 1"},
		{"a mismatch at the start", list(entry("30", "2", "2"), ok("31"), ok("32")), "order 30: revision is 3, approved 2"},
		{"an id no order has", list(ok("35"), ok("2147483647")), "order 2147483647: missing"},
		// Several mismatches: the first in id order is named, whatever the items' order.
		{"the lowest id is named", list(ok("21"), ok("9"), ok("17"), ok("4"), ok("1")), "order 4: belongs to another tenant"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// refuse proves that the matching orders before and after the
			// mismatch were not cancelled either, and jobs/job_audit are intact.
			refuse(t, s, "CH409", c.msg, "select cancel_chunk($1, $2)::text", "acme", c.items)
		})
	}
	t.Run("tenant is compared exactly", func(t *testing.T) {
		refuse(t, s, "CH409", "order 1: belongs to another tenant", "select cancel_chunk($1, $2)::text", "ACME", list(ok("1")))
	})
	t.Run("no order was changed", func(t *testing.T) {
		if got := pgtest.MustString(t, s.Conn, "select count(*)::text from orders where state = 'cancelled' and id < 100"); got != "1" {
			t.Fatalf("cancelled orders: %s, want only order 10", got)
		}
	})
}
