package shards

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// A shard's error comes back through the router as the shard raised it:
// the same SQLSTATE and message, without PL/Proxy's prefixes, so the
// driver's kinds match as on one server.
func TestShardErrorsPassThrough(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers)
	j := job{tenant: "acme", id: "spring", orders: []int64{1, 2, 3}}
	c.place(t, []job{j}, 2)

	for _, tc := range []struct {
		call func() error
		code string
		want string
	}{
		{func() error {
			_, err := driver.CancelChunk(ctx, c.router, "acme", []driver.Target{{ID: 9, Revision: 0, Qty: 1}})
			return err
		},
			driver.ConflictCode, "order 9: missing"},
		{func() error {
			_, err := c.router.Exec(ctx, `select cancel_chunk('acme', '[{"id": 1, "revision": 0, "qty": 2.5}]')`)
			return err
		}, "22023", "items[0].qty: must be an integer, got 2.5"},
		{func() error { _, err := driver.Register(ctx, c.router, job2("acme", "spring", 1)); return err },
			driver.ConflictCode, "job spring: already registered with chunk_size 2, not 1"},
		{func() error {
			_, err := driver.JobRef{Tenant: "acme", ID: "spring-"}.RunChunk(ctx, c.router, nil)
			return err
		},
			driver.ConflictCode, "job spring-: not found for tenant acme"},
		{func() error {
			_, err := fleet.Pause(ctx, c.router, driver.JobRef{Tenant: "acme", ID: "nope"})
			return err
		},
			driver.ConflictCode, "job nope: not found for tenant acme"},
		{func() error { _, err := c.router.Exec(ctx, "select run_chunk('acme', 'a b')"); return err },
			"22023", `job_id: must be 1 to 64 ASCII letters, digits, _ or -, got "a b"`},
	} {
		err := tc.call()
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != tc.code || pgErr.Message != tc.want {
			t.Errorf("%v; want %s %s", err, tc.code, tc.want)
		}
	}

	// A chunk whose job row is locked on the shard waits run_chunk's own
	// 500 ms there, and says so.
	sh := c.shardOf(t, "acme")
	tx, err := sh.conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "select from jobs where job_id = 'spring' for update"); err != nil {
		t.Fatal(err)
	}
	_, err = driver.JobRef{Tenant: "acme", ID: "spring"}.RunChunk(ctx, c.router, nil)
	if rerr := tx.Rollback(ctx); rerr != nil {
		t.Fatal(rerr)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" || !clitest.ContainsAll(pgErr.Message, "job spring: lock timeout after 500ms: waited for the job row") {
		t.Errorf("run_chunk on a locked job: %v; want the shard's 55P03", err)
	}
}

// A routed call is one transaction on its shard, committed within the
// call: a rollback on the router does not undo it. And a statement
// cancelled on the router (here by its statement_timeout) is cancelled on
// the shard too: the chunk rolls back there and nothing of it runs on.
func TestRouterTransactionAndCancel(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers)
	a, b := job{tenant: "acme", id: "a", orders: []int64{1, 2}}, job{tenant: "acme", id: "b", orders: []int64{3}}
	c.place(t, []job{a, b}, 1)
	sh := c.shardOf(t, "acme")

	err := pgx.BeginFunc(ctx, c.router, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "select run_chunk('acme', 'a')"); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	if err == nil || err.Error() != "roll back" {
		t.Fatal(err)
	}
	var next int
	if err := sh.conn.QueryRow(ctx, "select next_index from jobs where job_id = 'a'").Scan(&next); err != nil || next != 1 {
		t.Fatalf("after a rolled back router transaction: next_index %d, %v; want 1 (committed on the shard)", next, err)
	}

	if _, err := sh.conn.Exec(ctx, `create function slow() returns trigger language plpgsql as
		$$ begin perform pg_sleep(5); return new; end $$;
		create trigger slow before update on orders for each row when (new.id = 3) execute function slow()`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.router.Exec(ctx, "set statement_timeout = '300ms'"); err != nil {
		t.Fatal(err)
	}
	_, err = c.router.Exec(ctx, "select run_chunk('acme', 'b')")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Fatalf("run_chunk past the router's statement_timeout: %v; want 57014", err)
	}
	pgtest.WaitFor(t, 10*time.Second, "the shard's chunk to stop", untilOK(t, func() (bool, error) {
		var sleeping bool
		err := sh.conn.QueryRow(ctx, "select exists (select from pg_stat_activity where query like '%run_chunk%' and wait_event = 'PgSleep')").Scan(&sleeping)
		return err == nil && !sleeping, err
	}))
	var state string
	if err := sh.conn.QueryRow(ctx, "select (select next_index from jobs where job_id = 'b') || ' ' || state from orders where id = 3").Scan(&state); err != nil || state != "0 pending" {
		t.Fatalf("after the cancel: job b's next_index and order 3's state are %q, %v; want 0 pending", state, err)
	}
}
