package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// docs/contract.md §5: two concurrent registrations of one plan give one true and one
// false, never an error; two workers draining one job change every approved
// order exactly once.

func TestSQLConcurrentRegister(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	a, b := pgtest.Connect(t, s.DSN), pgtest.Connect(t, s.DSN)

	t.Run("both in their own transactions at once", func(t *testing.T) {
		for round := 0; round < 10; round++ {
			jobID := fmt.Sprintf("race-%d", round)
			p := plan(jobID, "acme", 1, 8, 3)
			type result struct {
				created bool
				err     error
			}
			results := make([]result, 2)
			var begun, done sync.WaitGroup
			start := make(chan struct{})
			for i, conn := range []*pgx.Conn{a, b} {
				begun.Add(1)
				done.Add(1)
				go func() {
					defer done.Done()
					tx, err := conn.Begin(ctx)
					begun.Done()
					if err != nil {
						results[i].err = err
						return
					}
					<-start
					err = tx.QueryRow(ctx, "select register($1)", p).Scan(&results[i].created)
					if err != nil {
						results[i].err = errors.Join(err, tx.Rollback(ctx))
						return
					}
					results[i].err = tx.Commit(ctx)
				}()
			}
			begun.Wait()
			close(start)
			done.Wait()
			for i, r := range results {
				if r.err != nil {
					t.Fatalf("round %d, session %d: %v", round, i, r.err)
				}
			}
			if results[0].created == results[1].created {
				t.Fatalf("round %d: register returned %v and %v, want one true and one false", round, results[0].created, results[1].created)
			}
			sameJSON(t, "inspect_job", pgtest.MustString(t, s.Conn, "select inspect_job($1)::text", jobID),
				fmt.Sprintf(`{"job_id": %q, "tenant": "acme", "targets": %s, "chunk_size": 3, "next_index": 0}`, jobID, targets(1, 8)))
		}
	})

	// The second registration waits for the first one's transaction, then
	// sees the committed job (false) or, when it was rolled back, inserts it (true).
	for _, c := range []struct {
		end  string
		want bool
	}{{"commit", false}, {"rollback", true}} {
		t.Run("the second waits for the first's "+c.end, func(t *testing.T) {
			jobID := "wait-" + c.end
			p := plan(jobID, "acme", 1, 4, 2)
			tx, err := a.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var created bool
			if err := tx.QueryRow(ctx, "select register($1)", p).Scan(&created); err != nil || !created {
				t.Fatalf("first register: %v %v", created, err)
			}
			pidB := pgtest.MustString(t, b, "select pg_backend_pid()::text")
			type result struct {
				created bool
				err     error
			}
			second := make(chan result, 1)
			go func() {
				var r result
				r.err = b.QueryRow(ctx, "select register($1)", p).Scan(&r.created)
				second <- r
			}()
			waitForLock(t, s, pidB)
			if c.end == "commit" {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			r := <-second
			if r.err != nil || r.created != c.want {
				t.Fatalf("second register after %s: got %v %v, want %v", c.end, r.created, r.err, c.want)
			}
			if got := pgtest.MustString(t, s.Conn, "select count(*)::text from jobs where job_id = $1", jobID); got != "1" {
				t.Fatalf("jobs rows for %s: %s", jobID, got)
			}
		})
	}
}

// waitForLock waits until the backend pid is waiting for a lock.
func waitForLock(t testing.TB, s *pgtest.Schema, pid string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if pgtest.MustString(t, s.Conn, "select coalesce(wait_event_type, '') from pg_stat_activity where pid = $1::int", pid) == "Lock" {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("backend %s never waited for a lock", pid)
}

// chunkResult is run_chunk's answer.
type chunkResult struct {
	Processed []int `json:"processed"`
	NextIndex int   `json:"next_index"`
	Done      bool  `json:"done"`
}

func TestSQLConcurrentRunChunk(t *testing.T) {
	t.Parallel()
	const n = 64
	for _, size := range []int{1, 3, 10} {
		t.Run(fmt.Sprintf("chunk_size %d", size), func(t *testing.T) {
			t.Parallel()
			s := pgtest.NewSchema(t)
			registerJob(t, s, "race", "acme", 1, n, size)

			type worker struct {
				calls    []chunkResult
				timeouts []time.Duration // 55P03 answers and how long each waited
				err      error
			}
			workers := make([]worker, 2)
			conns := []*pgx.Conn{pgtest.Connect(t, s.DSN), pgtest.Connect(t, s.DSN)}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range workers {
				w := &workers[i]
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					// At most one call per chunk plus a few: a loop that never ends is a bug.
					for range 2*n + 10 {
						begin := time.Now()
						out, err := pgtest.TryString(conns[i], "select run_chunk($1)::text", "race")
						if err != nil {
							if pgCode(err) == "55P03" {
								// A lock timeout is an honest answer under contention;
								// it changed nothing, and the loop calls again.
								w.timeouts = append(w.timeouts, time.Since(begin))
								continue
							}
							w.err = err
							return
						}
						var r chunkResult
						if err := json.Unmarshal([]byte(out), &r); err != nil {
							w.err = fmt.Errorf("%s: %w", out, err)
							return
						}
						w.calls = append(w.calls, r)
						if r.Done {
							return
						}
					}
					w.err = fmt.Errorf("not done after %d calls", 2*n+10)
				}()
			}
			close(start)
			wg.Wait()

			var all []int
			for i, w := range workers {
				if w.err != nil {
					t.Fatalf("worker %d: %v", i, w.err)
				}
				if len(w.calls) == 0 || !w.calls[len(w.calls)-1].Done {
					t.Fatalf("worker %d did not end with done: %+v", i, w.calls)
				}
				for _, d := range w.timeouts {
					if d < 500*time.Millisecond {
						t.Errorf("worker %d: 55P03 after only %v", i, d)
					}
				}
				if len(w.timeouts) > 0 {
					t.Logf("worker %d: %d lock timeouts %v", i, len(w.timeouts), w.timeouts)
				}
				nonEmpty := 0
				for _, r := range w.calls {
					if len(r.Processed) == 0 {
						if !r.Done || r.NextIndex != n {
							t.Fatalf("worker %d: an empty call that is not done: %+v", i, r)
						}
						continue
					}
					nonEmpty++
					// Every call did exactly one whole chunk of the approved order.
					first := r.Processed[0]
					end := min(first-1+size, n)
					if (first-1)%size != 0 || r.NextIndex != end || r.Done != (end == n) {
						t.Fatalf("worker %d: not a chunk: %+v", i, r)
					}
					want := make([]int, 0, size)
					for id := first; id <= end; id++ {
						want = append(want, id)
					}
					if !slices.Equal(r.Processed, want) {
						t.Fatalf("worker %d: processed %v, want %v", i, r.Processed, want)
					}
					all = append(all, r.Processed...)
				}
				t.Logf("worker %d: %d calls, %d chunks", i, len(w.calls), nonEmpty)
			}
			slices.Sort(all)
			want := make([]int, n)
			for i := range want {
				want[i] = i + 1
			}
			if !slices.Equal(all, want) {
				t.Fatalf("ids processed by both workers (%d): %v, want 1..%d once each", len(all), all, n)
			}

			rows := make([]string, n)
			for i := range rows {
				rows[i] = fmt.Sprintf(`[%d, "acme", 2, "cancelled", 4]`, i+1)
			}
			sameJSON(t, "orders", ordersOf(t, s, 0, 1000), list(rows...))
			sameJSON(t, "audit", auditOf(t, s, "race"), wantAudit(1, n))
			sameJSON(t, "inspect_job", pgtest.MustString(t, s.Conn, "select inspect_job('race')::text"),
				fmt.Sprintf(`{"job_id": "race", "tenant": "acme", "targets": %s, "chunk_size": %d, "next_index": %d}`, targets(1, n), size, n))
		})
	}
}

// A chunk locks its orders in ascending id order, one by one as its UPDATE
// changes them (change_orders, run_chunk's and cancel_chunk's change, has
// no separate FOR UPDATE since issue 26): while it waits for an order that
// another session holds, it holds every lower order of the chunk and none
// of the higher ones. Two chunks whose orders overlap therefore wait for
// each other in one direction only and cannot deadlock. Then the holder
// lets go and the chunk completes. change_orders is called directly, as
// run_chunk calls it, so that no lock_timeout of run_chunk's cuts the wait
// short on a slow machine.
func TestSQLRunChunkLocksOrdersInIDOrder(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 5, 5)
	tx := holding(t, s, "select 1 from orders where id = 3 for update")
	done := waitingFor(t, s, "select change_orders('acme', array[1, 2, 3, 4, 5], array[3, 3, 3, 3, 3], array[2, 2, 2, 2, 2], 'cancel')")
	// Orders 1 and 2 are the runner's; 4 and 5 are not locked yet.
	if got := pgtest.MustString(t, s.Conn, `select coalesce(string_agg(id::text, ' ' order by id), '')
	    from (select id from orders where id in (1, 2, 4, 5) order by id for update skip locked) as free`); got != "4 5" {
		t.Errorf("orders free while the chunk waits for order 3: %q, want \"4 5\" (1 and 2 locked by the chunk, in id order)", got)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("change_orders after the holder let go: %v", err)
	}
	if got := pgtest.MustString(t, s.Conn, "select string_agg(state || ' ' || revision, ', ' order by id) from orders where id between 1 and 5"); got !=
		"cancelled 4, cancelled 4, cancelled 4, cancelled 4, cancelled 4" {
		t.Errorf("orders after the chunk: %s", got)
	}
}

// holding runs sql (a row lock) in a transaction of a session of its own
// and returns that transaction, still open: the caller ends it.
func holding(t testing.TB, s *pgtest.Schema, sql string) pgx.Tx {
	t.Helper()
	tx, err := pgtest.Connect(t, s.DSN).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
	return tx
}
