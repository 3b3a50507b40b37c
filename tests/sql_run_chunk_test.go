package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// docs/contract.md §4 and §5 run_chunk at the SQL face.

// A stored job that breaks §4 is a conflict naming the job, and run_chunk
// changes nothing. Each case starts from empty tables, registers job "j"
// (orders 1..25 of acme, chunk size 10), runs `chunks` chunks, then tampers
// with jobs or job_audit by hand.
func TestSQLRunChunkCorruptJob(t *testing.T) {
	t.Parallel()
	swap11and12 := `update jobs set targets = jsonb_set(jsonb_set(targets, '{11}', targets->12), '{12}', targets->11)`
	cases := []struct {
		name   string
		chunks int
		tamper string
		msg    string
	}{
		{"targets is an object", 0, `update jobs set targets = '{"id": 1, "revision": 3, "qty": 2}'`,
			"job j: stored targets is not a list of 1 to 64 targets"},
		{"targets is a string", 1, `update jobs set targets = '"[]"'`, "job j: stored targets is not a list of 1 to 64 targets"},
		{"targets is json null", 1, `update jobs set targets = 'null'`, "job j: stored targets is not a list of 1 to 64 targets"},
		{"targets is empty", 0, `update jobs set targets = '[]'`, "job j: stored targets is not a list of 1 to 64 targets"},
		{"targets has 65 entries", 1, `update jobs set targets = '` + targets(1, 65) + `'`,
			"job j: stored targets is not a list of 1 to 64 targets"},
		{"targets unsorted ahead", 1, swap11and12,
			"job j: stored targets are not sorted by id without duplicates: targets[12].id is 12 after 13"},
		// Behind next_index the audit row at the first changed position differs first.
		{"targets unsorted behind next_index", 2, swap11and12,
			"job j: audit row 11 is (id 12, revision 3 -> 4, qty 2), approved (id 13, revision 3 -> 4, qty 2)"},
		{"targets unsorted at the start", 0, `update jobs set targets = jsonb_set(jsonb_set(targets, '{0}', targets->1), '{1}', targets->0)`,
			"job j: stored targets are not sorted by id without duplicates: targets[1].id is 1 after 2"},
		{"targets reversed", 0, `update jobs set targets = (select jsonb_agg(e order by (e->>'id')::int desc) from jsonb_array_elements(targets) e)`,
			"job j: stored targets are not sorted by id without duplicates: targets[1].id is 24 after 25"},
		{"duplicate id", 1, `update jobs set targets = jsonb_set(targets, '{12,id}', '12')`,
			"job j: stored targets are not sorted by id without duplicates: targets[12].id is 12 after 12"},
		{"duplicate id, whole entry", 0, `update jobs set targets = jsonb_set(targets, '{24}', targets->23)`,
			"job j: stored targets are not sorted by id without duplicates: targets[24].id is 24 after 24"},
		{"invalid entry: qty 0", 1, `update jobs set targets = jsonb_set(targets, '{5,qty}', '0')`,
			"job j: stored targets[5].qty: must be between 1 and 1000, got 0"},
		{"invalid entry: id 0", 0, `update jobs set targets = jsonb_set(targets, '{0,id}', '0')`,
			"job j: stored targets[0].id: must be between 1 and 2147483647, got 0"},
		{"invalid entry: revision 2147483647", 0, `update jobs set targets = jsonb_set(targets, '{3,revision}', '2147483647')`,
			"job j: stored targets[3].revision: must be between 0 and 2147483646, got 2147483647"},
		{"invalid entry: revision -1", 1, `update jobs set targets = jsonb_set(targets, '{3,revision}', '-1')`,
			"job j: stored targets[3].revision: must be between 0 and 2147483646, got -1"},
		{"invalid entry: id of 10 digits", 1, `update jobs set targets = jsonb_set(targets, '{24,id}', '4294967297')`,
			"job j: stored targets[24].id: must be between 1 and 2147483647, got 4294967297"},
		{"invalid entry: id of 10 digits in the next range", 1, `update jobs set targets = jsonb_set(targets, '{15,id}', '4294967297')`,
			"job j: stored targets[15].id: must be between 1 and 2147483647, got 4294967297"},
		{"invalid entry: revision 2147483647 in the next range", 1, `update jobs set targets = jsonb_set(targets, '{12,revision}', '2147483647')`,
			"job j: stored targets[12].revision: must be between 0 and 2147483646, got 2147483647"},
		{"invalid entry: qty of 10 digits in the committed part", 1, `update jobs set targets = jsonb_set(targets, '{1,qty}', '4294967297')`,
			"job j: stored targets[1].qty: must be between 1 and 1000, got 4294967297"},
		{"invalid entry: id of 11 digits", 1, `update jobs set targets = jsonb_set(targets, '{24,id}', '99999999999')`,
			"job j: stored targets[24].id: must be between 1 and 2147483647, got 99999999999"},
		{"invalid entry: a string", 1, `update jobs set targets = jsonb_set(targets, '{20}', '"x"')`,
			"job j: stored targets[20]: must be an object with the keys id, revision, qty, got string"},
		{"invalid entry: id as a string", 1, `update jobs set targets = jsonb_set(targets, '{14,id}', '"15"')`,
			`job j: stored targets[14].id: must be an integer, got "15"`},
		{"extra key", 1, `update jobs set targets = jsonb_set(targets, '{15,note}', '"x"')`,
			`job j: stored targets[15]: must have exactly the keys id, revision, qty, got {"id": 16, "qty": 2, "note": "x", "revision": 3}`},
		{"extra key in the committed part", 1, `update jobs set targets = jsonb_set(targets, '{2,note}', '"x"')`,
			`job j: stored targets[2]: must have exactly the keys id, revision, qty, got {"id": 3, "qty": 2, "note": "x", "revision": 3}`},
		{"missing key", 1, `update jobs set targets = targets #- '{15,qty}'`,
			`job j: stored targets[15]: must have exactly the keys id, revision, qty, got {"id": 16, "revision": 3}`},
		{"1.0 number", 1, `update jobs set targets = jsonb_set(targets, '{20,revision}', '3.0')`,
			"job j: stored targets[20].revision: must be an integer, got 3.0"},
		{"1.0 id in the committed part", 1, `update jobs set targets = jsonb_set(targets, '{0,id}', '1.0')`,
			"job j: stored targets[0].id: must be an integer, got 1.0"},
		{"tenant with a space", 1, `update jobs set tenant = 'acme corp'`, `job j: stored tenant "acme corp" is not valid`},
		{"tenant empty", 0, `update jobs set tenant = ''`, `job j: stored tenant "" is not valid`},
		{"tenant of 65 characters", 0, `update jobs set tenant = repeat('a', 65)`,
			fmt.Sprintf(`job j: stored tenant "%s"… (65 characters) is not valid`, strings.Repeat("a", 64))},
		{"next_index beyond n", 2, `update jobs set next_index = 26`, "job j: next_index 26 is beyond the 25 targets"},
		{"next_index not a multiple of chunk_size", 1, `update jobs set next_index = 5`,
			"job j: next_index 5 is not a multiple of chunk_size 10"},
		{"next_index moved ahead on a boundary", 1, `update jobs set next_index = 20`,
			"job j: audit row 10 is missing (next_index is 20)"},
		{"next_index reset to 0", 2, `update jobs set next_index = 0`, "job j: audit row 0 is extra (next_index is 0)"},
		{"next_index moved back one chunk", 2, `update jobs set next_index = 10`, "job j: audit row 10 is extra (next_index is 10)"},
		{"audit row missing", 1, `delete from job_audit where ordinal = 3`, "job j: audit row 3 is missing (next_index is 10)"},
		{"last audit row missing", 2, `delete from job_audit where ordinal = 19`, "job j: audit row 19 is missing (next_index is 20)"},
		{"all audit rows missing", 1, `delete from job_audit`, "job j: audit row 0 is missing (next_index is 10)"},
		{"audit row extra at next_index", 1, `insert into job_audit values ('j', 10, 11, 3, 4, 2)`,
			"job j: audit row 10 is extra (next_index is 10)"},
		{"audit row extra on a fresh job", 0, `insert into job_audit values ('j', 0, 1, 3, 4, 2)`,
			"job j: audit row 0 is extra (next_index is 0)"},
		{"audit row extra beyond n", 1, `insert into job_audit values ('j', 30, 99, 3, 4, 2)`,
			"job j: audit row 30 is extra (next_index is 10)"},
		{"audit row extra with a negative ordinal", 1, `insert into job_audit values ('j', -1, 99, 3, 4, 2)`,
			"job j: audit row -1 is extra (next_index is 10)"},
		{"audit row with another id", 1, `update job_audit set id = 99 where ordinal = 2`,
			"job j: audit row 2 is (id 99, revision 3 -> 4, qty 2), approved (id 3, revision 3 -> 4, qty 2)"},
		{"audit row with another previous_revision", 1, `update job_audit set previous_revision = 2 where ordinal = 2`,
			"job j: audit row 2 is (id 3, revision 2 -> 4, qty 2), approved (id 3, revision 3 -> 4, qty 2)"},
		{"audit row with another new_revision", 1, `update job_audit set new_revision = 5 where ordinal = 9`,
			"job j: audit row 9 is (id 10, revision 3 -> 5, qty 2), approved (id 10, revision 3 -> 4, qty 2)"},
		{"audit row with another qty", 2, `update job_audit set qty = 9 where ordinal = 14`,
			"job j: audit row 14 is (id 15, revision 3 -> 4, qty 9), approved (id 15, revision 3 -> 4, qty 2)"},
		{"audit rows with their ordinals swapped", 1,
			`update job_audit set ordinal = 1000 where ordinal = 4;
			 update job_audit set ordinal = 4 where ordinal = 5;
			 update job_audit set ordinal = 5 where ordinal = 1000`,
			"job j: audit row 4 is (id 6, revision 3 -> 4, qty 2), approved (id 5, revision 3 -> 4, qty 2)"},
		{"audit row rewritten from the current order", 1,
			`update orders set qty = 5, revision = revision + 1 where id = 3;
			 update job_audit a set previous_revision = o.revision - 1, new_revision = o.revision, qty = o.qty from orders o where o.id = a.id and a.id = 3`,
			"job j: audit row 2 is (id 3, revision 4 -> 5, qty 5), approved (id 3, revision 3 -> 4, qty 2)"},
		{"a done job with an audit row missing", 3, `delete from job_audit where ordinal = 24`,
			"job j: audit row 24 is missing (next_index is 25)"},
		{"a done job with an extra audit row", 3, `insert into job_audit values ('j', 25, 99, 3, 4, 2)`,
			"job j: audit row 25 is extra (next_index is 25)"},
		{"a done job with a tampered target", 3, `update jobs set targets = jsonb_set(targets, '{24,qty}', '3')`,
			"job j: audit row 24 is (id 25, revision 3 -> 4, qty 2), approved (id 25, revision 3 -> 4, qty 3)"},
	}
	s := pgtest.NewSchema(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			emptyTables(t, s)
			registerJob(t, s, "j", "acme", 1, 25, 10)
			for i := 0; i < c.chunks; i++ {
				s.Exec(t, "select run_chunk('j')")
			}
			s.Exec(t, c.tamper)
			refuse(t, s, "CH409", c.msg, "select run_chunk($1)::text", "j")
			// And again: a refusal is not a one-off.
			refuse(t, s, "CH409", c.msg, "select run_chunk($1)::text", "j")
		})
	}
	t.Run("unknown job", func(t *testing.T) {
		emptyTables(t, s)
		registerJob(t, s, "j", "acme", 1, 3, 2)
		refuse(t, s, "CH409", "job x: not found", "select run_chunk($1)::text", "x")
		refuse(t, s, "CH409", "job J: not found", "select run_chunk($1)::text", "J")
	})
}

// A chunk is all or nothing: a conflict in its middle keeps every earlier
// chunk and does not move next_index.
func TestSQLRunChunkConflictInTheMiddle(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 25, 10)
	sameJSON(t, "chunk 1", pgtest.MustString(t, s.Conn, "select run_chunk('j')::text"),
		`{"processed": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "next_index": 10, "done": false}`)

	// Order 15 of the chunk 11..20 was paid meanwhile (an ordinary change: revision + 1).
	s.Exec(t, "update orders set state = 'paid', revision = revision + 1 where id = 15")
	refuse(t, s, "CH409", "order 15: state is paid", "select run_chunk($1)::text", "j")
	sameJSON(t, "inspect_job", pgtest.MustString(t, s.Conn, "select inspect_job('j')::text"),
		`{"job_id": "j", "tenant": "acme", "targets": `+targets(1, 25)+`, "chunk_size": 10, "next_index": 10}`)
	sameJSON(t, "audit", auditOf(t, s, "j"), wantAudit(1, 10))
	var want []string
	for id := 1; id <= 25; id++ {
		switch {
		case id <= 10:
			want = append(want, fmt.Sprintf(`[%d, "acme", 2, "cancelled", 4]`, id))
		case id == 15:
			want = append(want, `[15, "acme", 2, "paid", 4]`)
		default:
			want = append(want, fmt.Sprintf(`[%d, "acme", 2, "pending", 3]`, id))
		}
	}
	sameJSON(t, "orders", ordersOf(t, s, 1, 25), list(want...))

	// Other kinds of conflict in the same place do the same.
	for _, c := range []struct{ tamper, msg string }{
		{"update orders set state = 'pending', revision = 4 where id = 15", "order 15: revision is 4, approved 3"},
		{"update orders set revision = 3, qty = 6 where id = 15", "order 15: qty is 6, approved 2"},
		{"update orders set qty = 2, tenant = 'other' where id = 15", "order 15: belongs to another tenant"},
		{"delete from orders where id = 15", "order 15: missing"},
		{"insert into orders values (15, 'acme', 2, 'pending', 3); update orders set state = 'cancelled', revision = 4 where id = 20",
			"order 20: state is cancelled"},
	} {
		s.Exec(t, c.tamper)
		refuse(t, s, "CH409", c.msg, "select run_chunk($1)::text", "j")
		if got := pgtest.MustString(t, s.Conn, "select next_index::text from jobs"); got != "10" {
			t.Fatalf("%s: next_index %s, want 10", c.msg, got)
		}
	}
}

// Later changes to committed orders are not corruption of the past: the next
// chunk runs, and the audit keeps the approved values.
func TestSQLRunChunkDriftOfCommittedOrders(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 25, 10)
	s.Exec(t, "select run_chunk('j')")
	s.Exec(t, "update orders set qty = 5, revision = revision + 1 where id = 3")
	s.Exec(t, "update orders set state = 'pending', revision = revision + 1 where id = 4")
	s.Exec(t, "delete from orders where id = 7")
	s.Exec(t, "update orders set tenant = 'other', revision = revision + 1 where id = 9")

	sameJSON(t, "chunk 2", pgtest.MustString(t, s.Conn, "select run_chunk('j')::text"),
		`{"processed": [11, 12, 13, 14, 15, 16, 17, 18, 19, 20], "next_index": 20, "done": false}`)
	sameJSON(t, "chunk 3", pgtest.MustString(t, s.Conn, "select run_chunk('j')::text"),
		`{"processed": [21, 22, 23, 24, 25], "next_index": 25, "done": true}`)
	sameJSON(t, "audit keeps the approved values", auditOf(t, s, "j"), wantAudit(1, 25))
	sameJSON(t, "drifted orders are left alone", ordersOf(t, s, 1, 10), `[
	  [1, "acme", 2, "cancelled", 4], [2, "acme", 2, "cancelled", 4], [3, "acme", 5, "cancelled", 5],
	  [4, "acme", 2, "pending", 5], [5, "acme", 2, "cancelled", 4], [6, "acme", 2, "cancelled", 4],
	  [8, "acme", 2, "cancelled", 4], [9, "other", 2, "cancelled", 5], [10, "acme", 2, "cancelled", 4]]`)
}

// A finished job answers done without changing anything, every time.
func TestSQLRunChunkDone(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 20, 10)
	sameJSON(t, "chunk 1", pgtest.MustString(t, s.Conn, "select run_chunk('j')::text"),
		`{"processed": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "next_index": 10, "done": false}`)
	// The last chunk is a full one: done comes with it, not with an extra call.
	sameJSON(t, "chunk 2", pgtest.MustString(t, s.Conn, "select run_chunk('j')::text"),
		`{"processed": [11, 12, 13, 14, 15, 16, 17, 18, 19, 20], "next_index": 20, "done": true}`)
	// Even when the orders have changed since: a finished job touches no order.
	s.Exec(t, "update orders set state = 'pending', revision = revision + 1 where id in (1, 20)")
	before := state(t, s)
	for i := 0; i < 2; i++ {
		sameJSON(t, "after done", pgtest.MustString(t, s.Conn, "select run_chunk('j')::text"),
			`{"processed": [], "next_index": 20, "done": true}`)
		unchanged(t, s, "run_chunk of a finished job", before)
	}
}

// run_chunk from a plain psql-like session (nothing set) waits at most 500 ms
// for a lock, and leaves the session's own lock_timeout as it was.
func TestSQLRunChunkLockWaitBounded(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 25, 10)
	s.Exec(t, "select run_chunk('j')")

	jobRow := "job j: lock timeout after 500ms: waited for the job row (another transaction holds it: a chunk of this job in flight, or a session that locked it)"
	anOrder := "job j: lock timeout after 500ms: waited for an order of this chunk (another transaction holds a lock on one of the orders 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)"
	cases := []struct {
		name, hold string
		setting    string // the runner session's lock_timeout
		msg        string // the error's message, naming the job and the lock
	}{
		{"job row, session default", "select 1 from jobs where job_id = 'j' for update", "", jobRow},
		{"job row, session lock_timeout 1min", "select 1 from jobs where job_id = 'j' for update", "1min", jobRow},
		{"an order of the next range", "select 1 from orders where id = 15 for update", "", anOrder},
		// Writing an audit row of the job takes a key-share lock on its row.
		{"an uncommitted audit insert of the job", "insert into job_audit values ('j', 50, 50, 3, 4, 2)", "", jobRow},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runner := pgtest.Connect(t, s.DSN) // a plain session: only search_path is set
			wantSetting := "0"
			if c.setting != "" {
				if _, err := runner.Exec(ctx, "select set_config('lock_timeout', $1, false)", c.setting); err != nil {
					t.Fatal(err)
				}
				wantSetting = c.setting
			}
			holder := pgtest.Connect(t, s.DSN)
			tx, err := holder.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, c.hold); err != nil {
				t.Fatal(err)
			}
			before := state(t, s)
			start := time.Now()
			_, err = pgtest.TryString(runner, "select run_chunk($1)::text", "j")
			waited := time.Since(start)
			pgtest.WantPgError(t, err, "55P03", c.msg)
			if waited < 400*time.Millisecond || waited > 1500*time.Millisecond {
				t.Fatalf("run_chunk waited %v, want about 500ms", waited)
			}
			t.Logf("55P03 after %v", waited)
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			unchanged(t, s, "a lock timeout", before)
			if got := pgtest.MustString(t, runner, "select current_setting('lock_timeout')"); got != wantSetting {
				t.Fatalf("lock_timeout after run_chunk: %s, want %s", got, wantSetting)
			}
			if got := pgtest.MustString(t, runner, "select current_setting('search_path')"); got != s.Name {
				t.Fatalf("search_path after run_chunk: %s, want %s", got, s.Name)
			}
			if st := runner.PgConn().TxStatus(); st != 'I' {
				t.Fatalf("transaction status after run_chunk: %c, want I (idle)", st)
			}
		})
	}
	// With the lock released, the same chunk runs, and the session's settings
	// are still its own afterwards.
	settings := "select current_setting('lock_timeout') || ' ' || current_setting('plan_cache_mode') || ' ' || current_setting('search_path')"
	before := pgtest.MustString(t, s.Conn, settings)
	sameJSON(t, "chunk 2", pgtest.MustString(t, s.Conn, "select run_chunk('j')::text"),
		`{"processed": [11, 12, 13, 14, 15, 16, 17, 18, 19, 20], "next_index": 20, "done": false}`)
	if after := pgtest.MustString(t, s.Conn, settings); after != before || before != "0 auto "+s.Name {
		t.Fatalf("settings around a successful run_chunk: %q, then %q", before, after)
	}
}
