package tests

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

func TestRunChunkHookOrder(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 12, 10)
	var points []string
	fault := func(p string) error { points = append(points, p); return nil }

	res, err := driver.RunChunk(ctx, s.Conn, "j", fault)
	if err != nil {
		t.Fatal(err)
	}
	if want := driver.Points; !reflect.DeepEqual(points, want) {
		t.Fatalf("hooks %v, want %v", points, want)
	}
	if !reflect.DeepEqual(res, driver.ChunkResult{Processed: seq(1, 10), NextIndex: 10}) {
		t.Fatalf("result %+v", res)
	}
	points = nil
	res, err = driver.RunChunk(ctx, s.Conn, "j", fault)
	if err != nil || !reflect.DeepEqual(res, driver.ChunkResult{Processed: seq(11, 2), NextIndex: 12, Done: true}) {
		t.Fatalf("last chunk: %+v, %v", res, err)
	}
	if len(points) != 4 {
		t.Fatalf("last chunk hooks %v", points)
	}
	points = nil
	res, err = driver.RunChunk(ctx, s.Conn, "j", fault)
	if err != nil || !reflect.DeepEqual(res, driver.ChunkResult{Processed: []int64{}, NextIndex: 12, Done: true}) {
		t.Fatalf("done job: %+v, %v", res, err)
	}
	if len(points) != 0 {
		t.Fatalf("a finished job called hooks %v", points)
	}
}

// A failure at each pre-commit point leaves orders, audit and next_index
// exactly as they were before that chunk, and keeps the earlier chunk.
func TestRunChunkPreCommitFailureRollsBack(t *testing.T) {
	t.Parallel()
	for _, point := range driver.Points[:3] {
		for _, mode := range []string{"error", "panic"} {
			t.Run(point+"/"+mode, func(t *testing.T) {
				t.Parallel()
				s := pgtest.NewSchema(t)
				registerJob(t, s, "j", "acme", 1, 25, 10)
				if _, err := driver.RunChunk(ctx, s.Conn, "j", nil); err != nil {
					t.Fatal(err)
				}
				s.Exec(t, "set lock_timeout = '7s'")
				s.Exec(t, "set statement_timeout = '9s'")
				settings := sessionSettings(t, s.Conn)
				before := state(t, s)
				hookErr := errors.New("drill at " + point)
				fault := func(p string) error {
					if p != point {
						return nil
					}
					if mode == "panic" {
						panic(hookErr)
					}
					return hookErr
				}
				var err error
				var recovered any
				func() {
					defer func() { recovered = recover() }()
					_, err = driver.RunChunk(ctx, s.Conn, "j", fault)
				}()
				if mode == "panic" {
					if recovered != hookErr {
						t.Fatalf("panic %v re-raised as %v", hookErr, recovered)
					}
				} else if !errors.Is(err, hookErr) {
					t.Fatalf("error %v, want the hook's error", err)
				}
				if after := state(t, s); after != before {
					t.Fatalf("the failed chunk left changes:\nbefore %s\nafter  %s", before, after)
				}
				sameJSON(t, "next_index", queryString(t, s, "select next_index::text from jobs"), "10")
				wantIdle(t, s.Conn, settings)
			})
		}
	}
}

func TestRunChunkAfterCommitErrorKeepsChunk(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 25, 10)
	hookErr := errors.New("client lost the answer")
	res, err := driver.RunChunk(ctx, s.Conn, "j", func(p string) error {
		if p == driver.AfterCommit {
			return hookErr
		}
		return nil
	})
	if err != hookErr {
		t.Fatalf("error %v, want the hook's own error", err)
	}
	if !reflect.DeepEqual(res, driver.ChunkResult{Processed: seq(1, 10), NextIndex: 10}) {
		t.Fatalf("result %+v, want the committed chunk", res)
	}
	sameJSON(t, "committed", queryString(t, s, "select jsonb_build_object('next', next_index, 'audit', (select count(*) from job_audit), 'cancelled', (select count(*) from orders where state = 'cancelled'))::text from jobs"),
		`{"next": 10, "audit": 10, "cancelled": 10}`)
	// The next run does the next chunk, never the finished one again.
	res, err = driver.RunChunk(ctx, s.Conn, "j", nil)
	if err != nil || !reflect.DeepEqual(res.Processed, seq(11, 10)) {
		t.Fatalf("next chunk %+v, %v", res, err)
	}
}

func TestRunChunkRestoresSettings(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 25, 10)
	s.Exec(t, "set lock_timeout = '7s'")
	s.Exec(t, "set statement_timeout = '9s'")
	s.Exec(t, "set search_path = "+s.Name+", public")
	settings := sessionSettings(t, s.Conn)
	if settings != [3]string{"7s", "9s", s.Name + ", public"} {
		t.Fatalf("setup: %v", settings)
	}
	if _, err := driver.RunChunk(ctx, s.Conn, "j", nil); err != nil {
		t.Fatal(err)
	}
	wantIdle(t, s.Conn, settings)
	s.Exec(t, "update orders set state = 'paid' where id = 15")
	_, err := driver.RunChunk(ctx, s.Conn, "j", nil)
	if !errors.Is(err, driver.ErrConflict) || err.Error() != "conflict: order 15: state is paid" {
		t.Fatalf("error %v", err)
	}
	wantIdle(t, s.Conn, settings)
	_, err = driver.RunChunk(ctx, s.Conn, "nope", nil)
	if !errors.Is(err, driver.ErrConflict) || err.Error() != "conflict: job nope: not found" {
		t.Fatalf("error %v", err)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "CH409" {
		t.Fatalf("the server's error is not reachable: %v", err)
	}
	wantIdle(t, s.Conn, settings)
}

func TestRunChunkRefusesOpenTransaction(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 5, 5)
	tx, err := s.Conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "update orders set qty = 9 where id = 1"); err != nil {
		t.Fatal(err)
	}
	called := false
	_, err = driver.RunChunk(ctx, s.Conn, "j", func(string) error { called = true; return nil })
	if !errors.Is(err, driver.ErrInvalid) || called {
		t.Fatalf("error %v (hook called: %v), want ErrInvalid and no hook", err, called)
	}
	var qty int
	if err := tx.QueryRow(ctx, "select qty from orders where id = 1").Scan(&qty); err != nil || qty != 9 {
		t.Fatalf("the caller's transaction is not as it was: qty %d, %v", qty, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "untouched", queryString(t, s, "select jsonb_build_object('next', next_index, 'audit', (select count(*) from job_audit))::text from jobs"),
		`{"next": 0, "audit": 0}`)
}

// Without a fault a chunk is one round trip (BEGIN, the bounds, run_chunk
// and COMMIT together); with a fault it is two (COMMIT after the hooks). A
// failure costs one more, the ROLLBACK, and leaves the connection idle with
// its settings as they were.
func TestRunChunkRoundTrips(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 50, 10)
	conn, counter := countingConnect(t, s)
	counter.Take()
	for i, c := range []struct {
		fault driver.Fault
		want  int
	}{{nil, 1}, {nil, 1}, {func(string) error { return nil }, 2}, {func(string) error { return nil }, 2}, {nil, 1}} {
		res, err := driver.RunChunk(ctx, conn, "j", c.fault)
		if err != nil || res.NextIndex != 10*(i+1) {
			t.Fatalf("chunk %d: %+v %v", i+1, res, err)
		}
		if n := counter.Take(); n != c.want {
			t.Fatalf("chunk %d (fault %v) cost %d round trips, want %d", i+1, c.fault != nil, n, c.want)
		}
	}
	if n := pgtest.MustString(t, s.Conn, "select count(*)::text from job_audit where job_id = 'j'"); n != "50" {
		t.Fatalf("%s audit rows, want 50", n)
	}
	// Finished: one round trip that learns done.
	if res, err := driver.RunChunk(ctx, conn, "j", nil); err != nil || !res.Done || len(res.Processed) != 0 || counter.Take() != 1 {
		t.Fatalf("finished job: %+v %v", res, err)
	}
	// A failing chunk costs two: the batch, then ROLLBACK.
	for _, fault := range []driver.Fault{nil, func(string) error { return nil }} {
		_, err := driver.RunChunk(ctx, conn, "missing", fault)
		if !errors.Is(err, driver.ErrConflict) {
			t.Fatal(err)
		}
		if n := counter.Take(); n != 2 {
			t.Fatalf("a failing chunk (fault %v) cost %d round trips, want 2", fault != nil, n)
		}
		if got := pgtest.MustString(t, conn, "select current_setting('lock_timeout') || ' ' || current_setting('statement_timeout')"); got != "0 0" {
			t.Fatalf("settings after the failure: %s", got)
		}
		counter.Take()
		if conn.PgConn().TxStatus() != 'I' {
			t.Fatalf("connection not idle after the failure: %q", conn.PgConn().TxStatus())
		}
	}
}

// The 2000 ms statement bound applies to the run_chunk call itself.
func TestRunChunkStatementTimeout(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 5, 5)
	s.Exec(t, `create function slow() returns trigger language plpgsql as $$
	           begin perform pg_sleep(3); return null; end $$`)
	s.Exec(t, "create trigger slow after update on orders for each statement execute function slow()")
	settings := sessionSettings(t, s.Conn)
	start := time.Now()
	_, err := driver.RunChunk(ctx, s.Conn, "j", nil)
	took := time.Since(start)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.QueryCanceled {
		t.Fatalf("error %v, want 57014", err)
	}
	if took < 1800*time.Millisecond || took > 2900*time.Millisecond {
		t.Fatalf("took %v, want about 2 s", took)
	}
	wantIdle(t, s.Conn, settings)
	sameJSON(t, "nothing", queryString(t, s, "select jsonb_build_object('next', next_index, 'cancelled', (select count(*) from orders where state = 'cancelled'))::text from jobs"),
		`{"next": 0, "cancelled": 0}`)
}

// The 500 ms lock bound applies while another session holds the job row.
func TestRunChunkLockTimeout(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 5, 5)
	tx := holding(t, s, "select 1 from jobs where job_id = 'j' for update")
	defer func() {
		if err := tx.Rollback(ctx); err != nil {
			t.Error(err)
		}
	}()
	settings := sessionSettings(t, s.Conn)
	start := time.Now()
	_, err := driver.RunChunk(ctx, s.Conn, "j", nil)
	took := time.Since(start)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.LockNotAvailable {
		t.Fatalf("error %v, want 55P03", err)
	}
	if took < 400*time.Millisecond || took > 1500*time.Millisecond {
		t.Fatalf("took %v, want about 0.5 s", took)
	}
	wantIdle(t, s.Conn, settings)
}

// A context cancelled in a hook rolls the chunk back; the connection stays usable.
func TestRunChunkCancelledContext(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 10, 5)
	settings := sessionSettings(t, s.Conn)
	before := state(t, s)
	cctx, cancel := context.WithCancel(ctx)
	_, err := driver.RunChunk(cctx, s.Conn, "j", func(p string) error {
		if p == driver.AfterAudit {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if after := state(t, s); after != before {
		t.Fatalf("a cancelled chunk left changes")
	}
	wantIdle(t, s.Conn, settings)
}

func TestChunkFileLeavesNoBackend(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 30, 10)
	app := "cf_" + s.Name
	dsn := s.DSN + " application_name=" + app
	backends := func() int {
		var n int
		if err := s.Conn.QueryRow(ctx, "select count(*) from pg_stat_activity where application_name = $1", app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var inside int
	res, err := driver.ChunkFile(ctx, dsn, "j", func(p string) error {
		if p == driver.AfterOrders {
			inside = backends()
		}
		return nil
	})
	if err != nil || !reflect.DeepEqual(res.Processed, seq(1, 10)) {
		t.Fatalf("%+v, %v", res, err)
	}
	if inside != 1 {
		t.Fatalf("%d backends during the chunk, want 1", inside)
	}
	hookErr := errors.New("boom")
	if _, err := driver.ChunkFile(ctx, dsn, "j", func(string) error { return hookErr }); !errors.Is(err, hookErr) {
		t.Fatalf("error %v", err)
	}
	func() {
		defer func() {
			if p := recover(); p != "kaboom" {
				t.Fatalf("panic %v", p)
			}
		}()
		_, err = driver.ChunkFile(ctx, dsn, "j", func(string) error { panic("kaboom") })
	}()
	// Backends end asynchronously after the client closes; give them a moment.
	deadline := time.Now().Add(3 * time.Second)
	for backends() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d backends left behind", backends())
		}
		time.Sleep(20 * time.Millisecond)
	}
	sameJSON(t, "only the first chunk", queryString(t, s, "select next_index::text from jobs"), "10")
}

func TestDrainCounting(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "a", "acme", 1, 40, 10)
	registerJob(t, s, "b", "acme", 101, 40, 10)

	res, err := driver.Drain(ctx, s.DSN, "a", 64)
	if err != nil || !reflect.DeepEqual(res, driver.DrainResult{Calls: 4, Processed: seq(1, 40), NextIndex: 40, Done: true}) {
		t.Fatalf("drain a: %+v, %v", res, err)
	}
	res, err = driver.Drain(ctx, s.DSN, "a", 64)
	if err != nil || !reflect.DeepEqual(res, driver.DrainResult{Calls: 1, Processed: []int64{}, NextIndex: 40, Done: true}) {
		t.Fatalf("drain a again: %+v, %v", res, err)
	}
	res, err = driver.Drain(ctx, s.DSN, "b", 2)
	if err != nil || !reflect.DeepEqual(res, driver.DrainResult{Calls: 2, Processed: seq(101, 20), NextIndex: 20, Done: false}) {
		t.Fatalf("drain b: %+v, %v", res, err)
	}
	// An error returns at once with what was gathered so far.
	s.Exec(t, "update orders set state = 'paid' where id = 135")
	res, err = driver.Drain(ctx, s.DSN, "b", 64)
	if !errors.Is(err, driver.ErrConflict) || !reflect.DeepEqual(res, driver.DrainResult{Calls: 1, Processed: seq(121, 10), NextIndex: 30}) {
		t.Fatalf("drain b after conflict: %+v, %v", res, err)
	}
}

func TestDrainValidatesBeforeConnecting(t *testing.T) {
	t.Parallel()
	unreachable := "host=127.0.0.1 port=1 user=x dbname=x sslmode=disable"
	for _, tc := range []struct {
		job  string
		max  int
		want string
	}{
		{"bad id", 5, "invalid: job_id: must be 1 to 64 ASCII letters, digits, _ or -, got \"bad id\""},
		{"", 5, "invalid: job_id: must be 1 to 64 ASCII letters, digits, _ or -, got 0 characters"},
		{"j", 0, "invalid: max_chunks: must be between 1 and 64, got 0"},
		{"j", 65, "invalid: max_chunks: must be between 1 and 64, got 65"},
	} {
		res, err := driver.Drain(ctx, unreachable, tc.job, tc.max)
		if !errors.Is(err, driver.ErrInvalid) || err.Error() != tc.want {
			t.Fatalf("Drain(%q, %d): %v, want %q", tc.job, tc.max, err, tc.want)
		}
		if res.Calls != 0 {
			t.Fatalf("calls %d", res.Calls)
		}
	}
	// A valid call on that DSN is a connection error, not ErrInvalid.
	_, err := driver.Drain(ctx, unreachable, "j", 1)
	if err == nil || errors.Is(err, driver.ErrInvalid) || errors.Is(err, driver.ErrConflict) {
		t.Fatalf("error %v, want a connection error", err)
	}
	// A DSN that cannot be parsed is refused without being shown: pgx's own
	// text masks passwords only on a best effort basis.
	for _, dsn := range []string{"host=127.0.0.1 password = SECRET port=x", "postgres://me:SEC@RET@127.0.0.1:x/db"} {
		_, err := driver.Drain(ctx, dsn, "j", 1)
		want := "invalid: dsn: cannot parse it: invalid port (the connection string is not shown: it may hold a password)"
		if !errors.Is(err, driver.ErrInvalid) || err.Error() != want {
			t.Fatalf("Drain on %q: %v, want %q", dsn, err, want)
		}
		if _, err := driver.ChunkFile(ctx, dsn, "j", nil); !errors.Is(err, driver.ErrInvalid) || strings.Contains(err.Error(), "SEC") {
			t.Fatalf("ChunkFile on %q: %v", dsn, err)
		}
	}
}

func TestDrainTwoGoroutinesOneJob(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 64, 3)
	type out struct {
		res driver.DrainResult
		err error
	}
	results := make(chan out, 2)
	for i := 0; i < 2; i++ {
		go func() {
			r, err := driver.Drain(ctx, s.DSN, "j", 64)
			results <- out{r, err}
		}()
	}
	seen := map[int64]int{}
	for i := 0; i < 2; i++ {
		o := <-results
		if o.err != nil {
			t.Fatal(o.err)
		}
		for _, id := range o.res.Processed {
			seen[id]++
		}
	}
	for id := int64(1); id <= 64; id++ {
		if seen[id] != 1 {
			t.Fatalf("order %d reported %d times", id, seen[id])
		}
	}
	if len(seen) != 64 {
		t.Fatalf("%d ids reported", len(seen))
	}
	sameJSON(t, "every order once", queryString(t, s, `select jsonb_build_object(
	  'cancelled', (select count(*) from orders where state = 'cancelled' and revision = 4),
	  'audit', (select count(*) from job_audit a where a.id = a.ordinal + 1 and a.previous_revision = 3 and a.new_revision = 4),
	  'next', (select next_index from jobs))::text`), `{"cancelled": 64, "audit": 64, "next": 64}`)
}

func TestNestedCancelChunk(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	seedOrders(t, s, "acme", 1, 10)
	other := pgtest.Connect(t, s.DSN)
	tx, err := s.Conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "insert into orders values (50, 'acme', 1, 'pending', 0)"); err != nil {
		t.Fatal(err)
	}
	changes, err := driver.CancelChunk(ctx, tx, "acme", []driver.Target{{ID: 2, Revision: 3, Qty: 2}, {ID: 1, Revision: 3, Qty: 2}})
	want := []driver.Change{{ID: 1, PreviousRevision: 3, NewRevision: 4, Qty: 2}, {ID: 2, PreviousRevision: 3, NewRevision: 4, Qty: 2}}
	if err != nil || !reflect.DeepEqual(changes, want) {
		t.Fatalf("changes %+v, %v", changes, err)
	}
	// A conflict rolls back only its own work (order 3 would have been first).
	_, err = driver.CancelChunk(ctx, tx, "acme", []driver.Target{{ID: 3, Revision: 3, Qty: 2}, {ID: 4, Revision: 9, Qty: 2}})
	if !errors.Is(err, driver.ErrConflict) || err.Error() != "conflict: order 4: revision is 3, approved 9" {
		t.Fatalf("error %v", err)
	}
	var n int
	if err := tx.QueryRow(ctx, "select count(*) from orders where state = 'cancelled'").Scan(&n); err != nil || n != 2 {
		t.Fatalf("inside: %d cancelled, %v; the outer transaction must stay usable", n, err)
	}
	if err := other.QueryRow(ctx, "select count(*) from orders where state = 'cancelled' or id = 50").Scan(&n); err != nil || n != 0 {
		t.Fatalf("outside before commit: %d rows visible, %v", n, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "after commit", queryString(t, s, "select jsonb_agg(id order by id)::text from orders where state = 'cancelled' or id = 50"), "[1, 2, 50]")
}

func TestRegisterInspectReportOverEachDB(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	seedOrders(t, s, "acme", 1, 5)
	pool := pgtest.Pool(t, s.DSN)
	tx, err := pgtest.Connect(t, s.DSN).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, db := range []driver.DB{s.Conn, tx, pool} {
		job := fmt.Sprintf("j%d", i)
		p := goPlan(job, "acme", 1, 5, 2)
		p.Targets[0], p.Targets[4] = p.Targets[4], p.Targets[0]
		created, err := driver.Register(ctx, db, p)
		if err != nil || !created {
			t.Fatalf("%T register: %v %v", db, created, err)
		}
		if created, err := driver.Register(ctx, db, p); err != nil || created {
			t.Fatalf("%T register again: %v %v", db, created, err)
		}
		got, err := driver.InspectJob(ctx, db, job)
		want := &driver.Job{JobID: job, Tenant: "acme", Targets: goPlan(job, "acme", 1, 5, 2).Targets, ChunkSize: 2}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%T inspect: %+v, %v", db, got, err)
		}
		if got, err := driver.InspectJob(ctx, db, "nope"); got != nil || err != nil {
			t.Fatalf("%T inspect unknown: %+v, %v", db, got, err)
		}
		rep, err := driver.Report(ctx, db, job)
		wantRep := driver.JobReport{Approved: seq(1, 5), Committed: []int64{}, Remaining: seq(1, 5), Matching: []int64{}, Drifted: []int64{}, Missing: []int64{}}
		if err != nil || !reflect.DeepEqual(rep, wantRep) {
			t.Fatalf("%T report: %+v, %v", db, rep, err)
		}
		if i == 1 { // an error aborts a transaction: check the errors after it
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			db = s.Conn
		}
		if _, err := driver.Report(ctx, db, "nope"); !errors.Is(err, driver.ErrConflict) || err.Error() != "conflict: job nope: not found" {
			t.Fatalf("%T report unknown: %v", db, err)
		}
		p.ChunkSize = 3
		if _, err := driver.Register(ctx, db, p); !errors.Is(err, driver.ErrConflict) ||
			err.Error() != fmt.Sprintf("conflict: job %s: already registered with chunk_size 2, not 3", job) {
			t.Fatalf("%T register different: %v", db, err)
		}
	}
}

// A connection lost in the middle of a chunk (its backend terminated) reads
// as one error, the server's 57P01, not that and "rollback: conn closed"
// glued together; nothing of the chunk stays.
func TestRunChunkLostConnection(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 10, 5)
	s.Exec(t, `create function slow() returns trigger language plpgsql as $$ begin perform pg_sleep(5); return null; end $$;
		create trigger slow after update on orders for each statement execute function slow()`)
	before := state(t, s)
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	pid := conn.PgConn().PID()
	done := make(chan error, 1)
	go func() {
		_, err := driver.RunChunk(ctx, conn, "j", nil)
		done <- err
	}()
	for sleeping, deadline := false, time.Now().Add(30*time.Second); !sleeping; {
		select {
		case err := <-done:
			t.Fatalf("RunChunk returned before its chunk slept: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the chunk is not inside its trigger's sleep within 30 s")
		}
		if err := s.Conn.QueryRow(ctx, "select count(*) = 1 from pg_stat_activity where pid = $1 and wait_event = 'PgSleep'", pid).Scan(&sleeping); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Conn.Exec(ctx, "select pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	err = <-done
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57P01" {
		t.Fatalf("RunChunk on a terminated backend: %v, want SQLSTATE 57P01", err)
	}
	if want := "FATAL: terminating connection due to administrator command (SQLSTATE 57P01)"; err.Error() != want {
		t.Fatalf("the error reads %q, want %q", err.Error(), want)
	}
	if !conn.IsClosed() {
		t.Fatal("the connection is still open")
	}
	unchanged(t, s, "a chunk whose connection was lost", before)
}
