package fleet

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chunks-dev/chunks/driver"
	fleetapi "github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// idRule is how every face refuses a worker id that application_name
// would not keep as it is.
const idRule = "must be 1 to 63 printable ASCII characters (all that application_name keeps), got "

// A worker id is what application_name keeps of it, so that "running in"
// names the worker the worker list shows: 1 to 63 printable ASCII
// characters. chunks worker refuses anything else with exit 2 naming
// --id, before it connects; so do the Go API and the SQL functions
// (22023). 63 characters are accepted.
func TestWorkerIDIsWhatApplicationNameKeeps(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	long, max := strings.Repeat("w", 64), strings.Repeat("w", 63)
	for _, id := range []string{long, "wörker", "tab\there", "\u202eevil"} {
		r := l.Chunks(t, "worker", "--id", id)
		if r.Code != 2 || !strings.Contains(r.Stderr, "chunks: invalid: --id: "+idRule) {
			t.Errorf("worker --id %q: want exit 2 naming --id, got %v", id, r)
		}
		pool, err := pgxpool.New(ctx, l.DSN)
		if err != nil {
			t.Fatal(err)
		}
		err = (&fleetapi.Worker{Pool: pool, ID: id}).Start(ctx)
		pool.Close()
		if !errors.Is(err, driver.ErrInvalid) || !strings.HasPrefix(err.Error(), "invalid: id: "+idRule) {
			t.Errorf("fleet.Worker with ID %q: %v", id, err)
		}
		quoted, err := json.Marshal(id) // as the SQL excerpt quotes it
		if err != nil {
			t.Fatal(err)
		}
		for _, sql := range []string{"select worker_heartbeat($1, 'host', 1, now(), 0, 'idle', null)", "select run_next_chunk($1)"} {
			_, err := l.Conn.Exec(ctx, sql, id)
			pgtest.WantPgError(t, err, "22023", "worker: "+idRule+string(quoted))
		}
	}
	l.Exec(t, "select worker_heartbeat($1, 'host', 1, now(), 0, 'idle', null)", max)
	list, err := fleetapi.Workers(ctx, l.Conn)
	if err != nil || len(list) != 1 || list[0].WorkerID != max {
		t.Fatalf("workers after a heartbeat of a 63-character id: %+v, %v", list, err)
	}
}

// A second worker with the id of a live one is refused at start (exit 2),
// naming the live one's host and pid; the live one goes on, and a stale
// worker_gone from another session deletes nothing. A worker killed with
// SIGKILL holds nothing: once its session is gone, its id starts again at
// once, without waiting for its row to age.
func TestWorkerIDOfALiveWorkerIsRefused(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	first := l.worker(t, "w1")
	second := l.startWorker(t, "w1")
	r := second.WaitWithin(t, 20*time.Second)
	pid := strconv.Itoa(first.PID())
	if r.Code != 2 || !strings.Contains(r.Stderr, "worker w1: is already running") || !strings.Contains(r.Stderr, "pid "+pid) ||
		!strings.Contains(r.Stderr, "give each worker its own id (chunks worker --id)") {
		t.Fatalf("a second worker w1: want exit 2 naming the live one (pid %s), got %v", pid, r)
	}
	t.Logf("the second w1: %s", r.Stderr)
	var gone bool
	if err := l.Conn.QueryRow(ctx, "select worker_gone('w1')").Scan(&gone); err != nil || gone {
		t.Fatalf("worker_gone('w1') from another session: %v, %v; want false", gone, err)
	}
	list, err := fleetapi.Workers(ctx, l.Conn)
	if err != nil || len(list) != 1 || list[0].WorkerID != "w1" || list[0].PID != first.PID() {
		t.Fatalf("workers with w1 running: %+v, %v", list, err)
	}
	stopWorkers(t, first)
	if n := pgtest.MustInt(t, l.Conn, "select count(*) from workers"); n != 0 {
		t.Fatalf("%d workers rows after w1 stopped", n)
	}

	killed := l.worker(t, "w2")
	killed.Signal(t, syscall.SIGKILL)
	killed.WaitWithin(t, 20*time.Second)
	l.waitSessionsGone(t)
	again := l.worker(t, "w2")
	stopWorkers(t, again)
}

// A row whose worker is not alive on this server (no session holds its
// lock), as a promoted standby has the rows of the old server's workers,
// is never shown, however fresh its last_seen, and the next heartbeat of
// any worker deletes it.
func TestWorkerRowsOfNoLiveWorkerGo(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.Exec(t, `insert into workers (worker_id, host, pid, started_at, last_seen, chunks, state)
	  values ('old-w', 'old-primary', 4242, now() - interval '1 hour', now(), 17, 'running')`)
	list, err := fleetapi.Workers(ctx, l.Conn)
	if err != nil || len(list) != 0 {
		t.Fatalf("workers with only a copied row: %+v, %v; want none", list, err)
	}
	if out := l.Chunks(t, "status"); out.Code != 0 || strings.Contains(out.Stdout, "old-w") {
		t.Fatalf("chunks status shows the copied row: %v", out)
	}
	w := l.worker(t, "new-w")
	if n := pgtest.MustInt(t, l.Conn, "select count(*) from workers where worker_id = 'old-w'"); n != 0 {
		t.Fatalf("the copied row is still there after a heartbeat")
	}
	list, err = fleetapi.Workers(ctx, l.Conn)
	if err != nil || len(list) != 1 || list[0].WorkerID != "new-w" {
		t.Fatalf("workers: %+v, %v; want new-w", list, err)
	}
	stopWorkers(t, w)
}

// waitSessionsGone waits until no session of the lab's processes is left
// on the server (a killed process's backends end when the server sees its
// connections close).
func (l *lab) waitSessionsGone(t testing.TB) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if pgtest.MustInt(t, l.Conn, "select count(*) from pg_stat_activity where application_name = $1", l.Name) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions of %s still there after 20 s", l.Name)
		}
	}
}
