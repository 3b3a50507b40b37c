package cli

import (
	"fmt"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Issue 36, item 7 through the binary: a change that sets updated_at to
// the chunk's time (set_now) on rows whose status is one of two and whose
// voided_at is NULL, its job registered from a query (register
// --from-query JOB), drained, reported and undone exactly.
func TestChangeSetNowFromQuery(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	bill := l.UserSchema(t, `create table %[1]s.invoices(id bigint primary key, status text not null, total integer not null,
	  voided_at timestamptz, updated_at timestamptz not null default '2020-01-01 00:00+00');
	insert into %[1]s.invoices(id, status, total) select g, case g %% 3 when 0 then 'shipped' when 1 then 'pending' else 'authorized' end, 10 * g
	  from generate_series(1, 12) g;
	update %[1]s.invoices set voided_at = '2021-01-01 00:00+00' where id = 4;`)
	def := writeFile(t, "void.json", fmt.Sprintf(`{"name": "void_invoice", "table": "%s.invoices", "key": "id", "expect": ["total"],
	  "when": {"status": ["pending", "authorized"], "voided_at": null}, "set": {"status": "void"}, "set_now": ["updated_at"]}`, bill))
	wantOK(t, l.Chunks(t, "change", "define", def))

	query := fmt.Sprintf(`select id, total from %s.invoices where status in ('pending', 'authorized') and voided_at is null`, bill)
	// The flags go with --from-query, and every one of them is needed.
	wantFailure(t, l.Chunks(t, "register", "--change", "void_invoice", "--tenant", "t", "plan.json"), 2,
		"--tenant goes with a non-empty --from-query; a PLAN.json has its own job_id, tenant, chunk_size and allow_partial")
	wantFailure(t, l.Chunks(t, "register", "--change", "void_invoice", "--tenant", "t", "--chunk-size", "3", "--from-query", query, "v1"), 2,
		"allow-partial")
	wantFailure(t, l.Chunks(t, "register", "--change", "void_invoice", "--tenant", "t", "--chunk-size", "3", "--allow-partial",
		"--from-query", "select id from "+bill+".invoices", "v1"), 2, "invalid: targets[0]: missing field total")
	if n := pgtest.MustInt(t, l.Conn, "select count(*) from jobs"); n != 0 {
		t.Fatalf("%d jobs after refusals, want 0", n)
	}

	if out := wantOK(t, l.Chunks(t, "register", "--change", "void_invoice", "--tenant", "t", "--chunk-size", "3", "--allow-partial",
		"--from-query", query, "v1")); out != "registered job v1 of change void_invoice: 7 targets of t, 3 per chunk\n" {
		t.Fatalf("register --from-query: %q", out)
	}
	// The same query again is the same approval.
	if out := wantOK(t, l.Chunks(t, "register", "--change", "void_invoice", "--tenant", "t", "--chunk-size", "3", "--allow-partial",
		"--from-query", query, "v1")); out != "job v1 was already registered with this approval; nothing changed\n" {
		t.Fatalf("register --from-query again: %q", out)
	}
	wantOK(t, l.Chunks(t, "drain", "v1"))
	// Each chunk wrote its own transaction's time; every row of a chunk the same.
	if n := pgtest.MustInt(t, l.Conn, fmt.Sprintf(`select count(distinct updated_at) from %s.invoices where status = 'void'`, bill)); n != 3 {
		t.Fatalf("%d distinct updated_at among the changed rows, want 3 (one per chunk)", n)
	}
	if n := pgtest.MustInt(t, l.Conn, fmt.Sprintf(`select count(*) from %s.invoices as i join change_audit as a on a.key = i.id::text
	    where a.job_id = 'v1' and i.status = 'void' and i.updated_at > '2020-01-01 00:00+00' and (a.after ->> 'updated_at')::timestamptz = i.updated_at`, bill)); n != 7 {
		t.Fatalf("%d changed rows hold the time their audit says, want 7", n)
	}
	all := []any{1.0, 2.0, 5.0, 7.0, 8.0, 10.0, 11.0}
	wantJSON(t, l.Chunks(t, "--json", "report", "v1"), map[string][]any{
		"approved": all, "committed": all, "remaining": {}, "matching": all, "drifted": {}, "missing": {}})

	wantOK(t, l.Chunks(t, "undo", "v1"))
	wantOK(t, l.Chunks(t, "drain", "v1-undo"))
	if got := pgtest.MustString(t, l.Conn, fmt.Sprintf(`select string_agg(format('%%s %%s %%s', id, status, updated_at at time zone 'UTC'), ', ' order by id) from %s.invoices`, bill)); got !=
		"1 pending 2020-01-01 00:00:00, 2 authorized 2020-01-01 00:00:00, 3 shipped 2020-01-01 00:00:00, 4 pending 2020-01-01 00:00:00, "+
			"5 authorized 2020-01-01 00:00:00, 6 shipped 2020-01-01 00:00:00, 7 pending 2020-01-01 00:00:00, 8 authorized 2020-01-01 00:00:00, "+
			"9 shipped 2020-01-01 00:00:00, 10 pending 2020-01-01 00:00:00, 11 authorized 2020-01-01 00:00:00, 12 shipped 2020-01-01 00:00:00" {
		t.Fatalf("after the undo: %s", got)
	}

	// The built-in cancellation of orders takes its targets from a query too.
	l.Exec(t, "insert into orders(id, tenant, qty, state, revision) values (501, 'acme', 2, 'pending', 1), (502, 'acme', 3, 'pending', 4)")
	if out := wantOK(t, l.Chunks(t, "register", "--tenant", "acme", "--chunk-size", "2", "--allow-partial",
		"--from-query", "select id, revision, qty from orders where tenant = 'acme'", "o1")); out != "registered job o1: 2 orders of acme, 2 per chunk\n" {
		t.Fatalf("register --from-query of orders: %q", out)
	}
	if got := pgtest.MustString(t, l.Conn, "select targets::text from jobs where job_id = 'o1'"); got != `[{"id": 501, "qty": 2, "revision": 1}, {"id": 502, "qty": 3, "revision": 4}]` {
		t.Fatalf("o1's targets: %s", got)
	}
}
