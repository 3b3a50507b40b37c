package fleet

// Fault tests: real servers of the tests' own (internal/localpg) that are
// crashed, failed over, filled up and shut down under real chunks worker
// processes. Each test keeps a Jepsen-style ledger of what the workers
// acknowledged (their --json --verbose "chunk committed" lines) and checks
// it against the database after recovery: no acknowledged chunk lost, none
// acknowledged twice, and every order changed exactly once.

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	fleetapi "github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// workerFlags make the workers of the fault tests try again quickly.
var workerFlags = []string{"--concurrency", "2", "--poll", "100ms", "--retry-delay", "100ms"}

// Classify on real errors of a real server: the permanent ones (an
// unknown role or database, chunks not installed, an invalid DSN) and the
// transient ones (no free connection slot, a read-only server, a session
// the server ended, a server shutting down, then down).
func TestClassifyRealErrors(t *testing.T) {
	t.Parallel()
	srv, err := localpg.Start(ctx, localpg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	dsn := func(user, db string, extra ...string) string {
		return strings.Join(append([]string{fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=%s sslmode=disable connect_timeout=5",
			srv.Port, user, db)}, extra...), " ")
	}
	connectErr := func(dsn string) error {
		t.Helper()
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			t.Fatalf("connect %s: want an error, it connected (%v)", dsn, conn.Close(ctx))
		}
		return err
	}
	admin := pgtest.Connect(t, srv.DSN())
	if _, err := admin.Exec(ctx, "create role capped login connection limit 0"); err != nil {
		t.Fatal(err)
	}
	queryErr := func(sql string) error {
		t.Helper()
		_, err := admin.Exec(ctx, sql)
		if err == nil {
			t.Fatalf("%s: want an error", sql)
		}
		return err
	}
	_, parseErr := pgx.ParseConfig("host=127.0.0.1 port=notaport")
	check := func(name string, err error, wantTransient bool, wantReason string) {
		t.Helper()
		transient, reason := fleetapi.Classify(err)
		if transient != wantTransient || !strings.Contains(reason, wantReason) {
			t.Errorf("%s: Classify(%v) = %v, %q; want %v and a reason with %q", name, err, transient, reason, wantTransient, wantReason)
		}
	}
	check("unknown role", connectErr(dsn("nobody_here", "postgres")), false, "authentication failed (SQLSTATE 28000)")
	check("unknown database", connectErr(dsn("postgres", "no_such_db")), false, "the database does not exist (SQLSTATE 3D000)")
	check("no chunks", queryErr("select queue_channel()"), false, "(SQLSTATE 42883): run chunks migrate")
	check("invalid DSN", parseErr, false, "invalid connection string")
	check("no free slot", connectErr(dsn("capped", "postgres")), true, "no free connection slot (SQLSTATE 53300")
	readOnly := pgtest.Connect(t, srv.DSN()+" options='-c default_transaction_read_only=on'")
	_, err = readOnly.Exec(ctx, "create table t ()")
	check("read-only transaction", err, true, "takes no writes (SQLSTATE 25006)")
	if err := readOnly.Close(ctx); err != nil { // the smart shutdown below waits for every session
		t.Fatal(err)
	}
	check("no writable host", connectErr(dsn("postgres", "postgres", "target_session_attrs=read-write",
		"options='-c default_transaction_read_only=on'")), true, "no writable server among the hosts")

	// A session the server ended (pg_terminate_backend): the next query
	// reads the server's FATAL 57P01, or finds the connection closed.
	victim := pgtest.Connect(t, srv.DSN())
	terminate(t, admin, "select $1::int", victim.PgConn().PID())
	_, err = victim.Exec(ctx, "select 1")
	if transient, reason := fleetapi.Classify(err); !transient || !strings.Contains(reason, "57P01") && !strings.Contains(reason, "connection lost") {
		t.Errorf("a terminated session: Classify(%v) = %v, %q; want transient, 57P01 or connection lost", err, transient, reason)
	}

	// A smart shutdown (SIGTERM to the postmaster) waits for the open
	// session and refuses new ones with 57P03; once the session closes the
	// server exits, and connections are refused.
	if err := syscall.Kill(srv.PID(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var shutting error
	pgtest.WaitFor(t, 10*time.Second, "the server to refuse new sessions while it shuts down", func() bool {
		shutting = connectErr(srv.DSN())
		return strings.Contains(shutting.Error(), "57P03")
	})
	check("shutting down", shutting, true, "starting up, shutting down or recovering (SQLSTATE 57P03)")
	if err := admin.Close(ctx); err != nil {
		t.Fatal(err)
	}
	pid := srv.PID()
	pgtest.WaitFor(t, 10*time.Second, "the postmaster to exit", func() bool {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	})
	check("server down", connectErr(srv.DSN()), true, "connection refused")
}

// chunks worker at start: a wrong role or database, or a schema without
// chunks, exits 1 at once with one line and no retry; an invalid DSN exits
// 2. A worker started while the server is down waits, logging each attempt
// with its reason and a growing delay (100, 200, 400 ms...); SIGTERM stops
// it cleanly while it waits; once the server is up it works.
func TestWorkerStartup(t *testing.T) {
	t.Parallel()
	c := newCluster(t, localpg.Options{})
	dsn := func(user, db string) string {
		return fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=%s sslmode=disable", c.srv.Port, user, db)
	}
	for _, tc := range []struct {
		name, dsn, schema string
		code              int
		want              string
	}{
		{"unknown role", dsn("nobody_here", "postgres"), c.schema, 1,
			`chunks: worker w cannot start: authentication failed (SQLSTATE 28000): check the user, password and pg_hba.conf: failed to connect to ` +
				"`user=nobody_here database=postgres`"},
		{"unknown database", dsn("postgres", "no_such_db"), c.schema, 1,
			"chunks: worker w cannot start: the database does not exist (SQLSTATE 3D000): check the DSN: failed to connect to"},
		{"no chunks", dsn("postgres", "postgres"), "elsewhere", 1,
			"chunks: no chunks queue on the search_path: run chunks migrate for this schema first (function queue_channel() does not exist)"},
		{"invalid DSN", "host=127.0.0.1 port=notaport", c.schema, 2, "chunks: invalid: dsn: cannot parse"},
	} {
		r := clitest.Run(t, "--dsn", tc.dsn, "--schema", tc.schema, "worker", "--id", "w")
		lines := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
		if r.Code != tc.code || len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) || r.Stdout != "" {
			t.Errorf("%s: want exit %d and one line starting %q, got %v", tc.name, tc.code, tc.want, r)
		}
	}

	if err := c.srv.Shutdown(); err != nil {
		t.Fatal(err)
	}
	waiter := c.startWorker(t, c.srv.DSN(), c.schema, "waiter", workerFlags...)
	quitter := c.startWorker(t, c.srv.DSN(), c.schema, "quitter", workerFlags...)
	for _, w := range []*clitest.Proc{waiter, quitter} {
		w.WaitLine(t, 0, 10*time.Second, `"msg":"waiting for the database"`, `"attempt":3`)
	}
	for i, want := range []int{100, 200, 400} {
		line := waiter.Lines()[waiter.WaitLine(t, 0, time.Second, `"msg":"waiting for the database"`, fmt.Sprintf(`"attempt":%d,`, i+1))]
		var e struct {
			Reason  string `json:"reason"`
			RetryMs int    `json:"retry_in_ms"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.RetryMs != want || e.Reason != "connection refused: the server is down or not listening yet" {
			t.Errorf("attempt %d: %+v, want connection refused and a retry in %d ms", i+1, e, want)
		}
	}
	quitter.Signal(t, syscall.SIGTERM)
	if r := quitter.WaitWithin(t, 10*time.Second); r.Code != 0 || !strings.Contains(r.Stderr, "stopped before the database was ready: no chunk ran") ||
		!strings.Contains(r.Stdout, `"chunks":0`) {
		t.Errorf("SIGTERM while waiting for the database: want exit 0 and the summary, got %v", r)
	}

	down := time.Now()
	if err := c.srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	waiter.WaitLine(t, 0, 10*time.Second, readyLine)
	t.Logf("the server was down %s; the waiting worker was ready %s after it came back",
		up.Sub(down).Round(time.Millisecond), time.Since(up).Round(time.Millisecond))
	if strings.Contains(strings.Join(waiter.Lines(), "\n"), `"level":"ERROR"`) {
		t.Errorf("a transient fault logged at error level:\n%s", strings.Join(waiter.Lines(), "\n"))
	}
	l := c.lab(t, c.srv)
	jobs := seedJobs(t, l, 1, 3)
	pgtest.WaitFor(t, 20*time.Second, "the jobs done", func() bool { return l.allDone(t) })
	stopWorkers(t, waiter)
	wantLedgerHeld(t, "after the start-up wait", ledger(t, waiter), l.wantConsistent(t, jobs))
	l.wantFinished(t, jobs)
}

// A server crash (immediate stop, fsync on) in the middle of a run of three
// workers, then crash recovery: while the workers are frozen (SIGSTOP), the
// recovered data holds every chunk they acknowledged and is consistent;
// thawed (SIGCONT), the same processes finish every job, and every order
// changed exactly once.
func TestServerCrashMidRun(t *testing.T) {
	t.Parallel()
	c := newCluster(t, localpg.Options{Durable: true})
	l := c.lab(t, c.srv)
	l.slowOrders(t, 0.05)
	jobs := seedJobs(t, l, 2, 12)
	total := 0
	for _, j := range jobs {
		total += len(j.Targets)
	}
	app := c.schema + "-w"
	var workers []*clitest.Proc
	for i := range 3 {
		workers = append(workers, c.startWorker(t, c.srv.DSN(), app, fmt.Sprintf("w%d", i+1), workerFlags...))
	}
	for _, w := range workers {
		w.WaitLine(t, 0, 20*time.Second, readyLine)
	}
	pgtest.WaitFor(t, 20*time.Second, "a quarter done and a chunk in flight", func() bool {
		return progressSum(l.progress(t)) >= total/4 && l.chunkInFlightAs(t, app)
	})
	crashed := crashUnder(t, c.srv, workers)
	for _, w := range workers {
		w.Signal(t, syscall.SIGSTOP)
	}
	if err := c.srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	recovered := time.Now()

	l = c.lab(t, c.srv)
	progress := l.wantConsistent(t, jobs)
	if done := progressSum(progress); done == 0 || done == total {
		t.Fatalf("%d of %d ids done at the crash: not mid-run, the test proves nothing", done, total)
	}
	wantLedgerHeld(t, "recovered, workers frozen", ledger(t, workers...), progress)

	for _, w := range workers {
		w.Signal(t, syscall.SIGCONT)
	}
	thawed := time.Now()
	pgtest.WaitFor(t, 30*time.Second, "every job done after the crash", func() bool { return l.allDone(t) })
	stopWorkers(t, workers...)
	all := ledger(t, workers...)
	// Lines read after the check but written before the crash: the workers
	// were frozen from before the restart until the thaw, so every line
	// logged before the thaw acknowledges a chunk of the crashed server.
	old := before(all, thawed)
	if gone := lost(old, progress); len(gone) > 0 {
		t.Errorf("chunks acknowledged before the crash and not recovered: %v", gone)
	}
	wantLedgerHeld(t, "at the end", all, l.wantConsistent(t, jobs))
	l.wantFinished(t, jobs)
	for _, w := range workers {
		if n := readyCount(w); n != 1 {
			t.Errorf("%s logged ready %d times, want once: it must not start over", w.Name, n)
		}
	}
	t.Logf("crash at %d/%d ids (%d chunks acknowledged); restart with crash recovery took %s after the crash; first chunk %s after the thaw",
		progressSum(progress), total, len(old), recovered.Sub(crashed).Round(time.Millisecond), firstAfter(all, thawed))
}

// firstAfter is how long after t the first chunk of entries was acknowledged.
func firstAfter(entries []committed, t time.Time) string {
	for _, e := range entries {
		if e.Time.After(t) {
			return e.Time.Sub(t).Round(time.Millisecond).String()
		}
	}
	return "(none)"
}

// Failover to a synchronous standby: the workers' DSN names both servers
// with target_session_attrs=read-write. The primary is killed mid-run
// (immediate stop); the workers log the fault and keep trying (the one
// host refuses, the other is read-only). Once the standby has replayed what
// it received, it holds every chunk acknowledged on the primary: with
// synchronous_standby_names, a commit returns only once the standby has
// it. It is promoted, and the same workers move over by themselves and
// finish. A worker started on the standby alone before the promotion waits
// (not writable yet) and then works.
func TestFailoverToSynchronousStandby(t *testing.T) {
	t.Parallel()
	needStandbys(t)
	c := newCluster(t, localpg.Options{Durable: true})
	sb := c.standby(t, localpg.StandbyOptions{Name: "sync1", Synchronous: true})
	l := c.lab(t, c.srv)
	l.slowOrders(t, 0.05)
	jobs := seedJobs(t, l, 3, 10)
	app := c.schema + "-w"
	dsn := multiHost(c.srv, sb)
	workers := []*clitest.Proc{c.startWorker(t, dsn, app, "w1", workerFlags...), c.startWorker(t, dsn, app, "w2", workerFlags...)}
	for _, w := range workers {
		w.WaitLine(t, 0, 20*time.Second, readyLine)
	}
	pgtest.WaitFor(t, 20*time.Second, "some chunks done and one in flight", func() bool {
		return progressSum(l.progress(t)) >= 20 && l.chunkInFlightAs(t, app)
	})
	crashed := crashUnder(t, c.srv, workers)
	for _, w := range workers {
		w.WaitLine(t, 0, 10*time.Second, `"msg":"pass failed: nothing of it committed; retrying"`,
			`"reason":"no writable server among the hosts (target_session_attrs=read-write)`)
	}

	replica := c.lab(t, sb)
	progress := replica.replayed(t, jobs)
	wantLedgerHeld(t, "the standby, before its promotion", ledger(t, workers...), progress)
	late := c.startWorker(t, sb.DSN(), app, "late", workerFlags...)
	late.WaitLine(t, 0, 10*time.Second, `"msg":"waiting for the database"`,
		`"reason":"not writable yet: the server is a standby (pg_is_in_recovery() is true)`)
	if err := sb.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	late.WaitLine(t, 0, 10*time.Second, readyLine)
	pgtest.WaitFor(t, 30*time.Second, "every job done on the promoted standby", func() bool { return replica.allDone(t) })
	workers = append(workers, late)
	stopWorkers(t, workers...)
	all := ledger(t, workers...)
	wantLedgerHeld(t, "before the promotion", before(all, promoted), progress)
	wantLedgerHeld(t, "at the end", all, replica.wantConsistent(t, jobs))
	replica.wantFinished(t, jobs)
	t.Logf("primary killed at %d ids; promoted %s later; first chunk on the new primary %s after the promotion",
		progressSum(progress), promoted.Sub(crashed).Round(time.Millisecond), firstAfter(all, promoted))
}

// An asynchronous standby loses acknowledged chunks in a failover: here it
// is cut off from its primary (its primary_conninfo names a role that does
// not exist), the workers go on committing on the primary, the primary is
// killed and the standby promoted. The standby is consistent but older: the
// chunks acknowledged after the cut are not there. The workers then run
// those chunks again, on orders that on this server were never changed, so
// the data ends exactly right, but the ledger shows each of them
// acknowledged twice. synchronous_standby_names (previous test) prevents it.
func TestFailoverToAsynchronousStandbyLosesAcknowledgedChunks(t *testing.T) {
	t.Parallel()
	needStandbys(t)
	c := newCluster(t, localpg.Options{Durable: true})
	sb := c.standby(t, localpg.StandbyOptions{Name: "async1"})
	l := c.lab(t, c.srv)
	l.slowOrders(t, 0.05)
	jobs := seedJobs(t, l, 4, 10)
	replica := c.lab(t, sb)
	pgtest.WaitFor(t, 10*time.Second, "the standby to replay the jobs", func() bool {
		return pgtest.MustInt(t, replica.Conn, "select count(*) from jobs") == len(jobs)
	})
	app := c.schema + "-w"
	dsn := multiHost(c.srv, sb)
	workers := []*clitest.Proc{c.startWorker(t, dsn, app, "w1", workerFlags...), c.startWorker(t, dsn, app, "w2", workerFlags...)}
	for _, w := range workers {
		w.WaitLine(t, 0, 20*time.Second, readyLine)
	}
	pgtest.WaitFor(t, 20*time.Second, "some chunks done", func() bool { return progressSum(l.progress(t)) >= 10 })

	replica.Exec(t, fmt.Sprintf("alter system set primary_conninfo = 'host=127.0.0.1 port=%d user=no_such_role'", c.srv.Port))
	replica.Exec(t, "select pg_reload_conf()")
	pgtest.WaitFor(t, 10*time.Second, "the standby to stop streaming", func() bool {
		return pgtest.MustInt(t, l.Conn, "select count(*) from pg_stat_replication where application_name = 'async1'") == 0
	})
	// Each of the 4 passes may log one chunk that committed before the cut;
	// the fifth line after it is a chunk committed after it.
	atCut := len(ledger(t, workers...))
	pgtest.WaitFor(t, 20*time.Second, "5 chunks acknowledged after the cut", func() bool { return len(ledger(t, workers...)) >= atCut+5 })
	crashUnder(t, c.srv, workers)
	progress := replica.replayed(t, jobs)
	if err := sb.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	pgtest.WaitFor(t, 30*time.Second, "every job done on the promoted standby", func() bool { return replica.allDone(t) })
	stopWorkers(t, workers...)
	replica.wantFinished(t, jobs)

	all := ledger(t, workers...)
	old := before(all, promoted)
	gone := lost(old, progress)
	if len(gone) == 0 {
		t.Fatalf("no acknowledged chunk lost: the standby was not behind (%d acknowledged, progress %v)", len(old), progress)
	}
	t.Logf("promoted the asynchronous standby: %d of %d acknowledged chunks lost: %v", len(gone), len(old), gone)
	key := func(e committed) string { return fmt.Sprintf("%s/%d", e.Job, e.NextIndex) }
	var lostKeys, twiceKeys []string
	for _, e := range gone {
		lostKeys = append(lostKeys, key(e))
	}
	for _, e := range duplicated(all) {
		twiceKeys = append(twiceKeys, key(e))
	}
	slices.Sort(lostKeys)
	slices.Sort(twiceKeys)
	if strings.Join(lostKeys, " ") != strings.Join(twiceKeys, " ") {
		t.Errorf("the chunks acknowledged twice are not exactly the lost ones:\n lost %v\ntwice %v", lostKeys, twiceKeys)
	}
}

// crashUnder crashes srv (immediate stop) under running workers and waits
// until each of them has logged a failed pass: they noticed, and go on
// trying. It returns when the crash was.
func crashUnder(t testing.TB, srv *localpg.Server, workers []*clitest.Proc) time.Time {
	t.Helper()
	marks := make([]int, len(workers))
	for i, w := range workers {
		marks[i] = w.LineCount()
	}
	if err := srv.Crash(); err != nil {
		t.Fatal(err)
	}
	crashed := time.Now()
	for i, w := range workers {
		w.WaitLine(t, marks[i], 10*time.Second, `"msg":"pass failed: nothing of it committed; retrying"`)
	}
	return crashed
}

// replayed waits until the standby l is on has replayed all the WAL it
// received, which is where it starts from when it is promoted, and returns
// the jobs' progress there after checking that it is consistent.
func (l *lab) replayed(t testing.TB, jobs []job) map[string]int {
	t.Helper()
	// Replay reaches the last byte received, or stops short of it when the
	// stream was cut inside a WAL record (replay applies whole records
	// only): done once it has not moved for two seconds.
	last, still := "", time.Now()
	pgtest.WaitFor(t, 30*time.Second, "the standby to replay what it received", func() bool {
		at := pgtest.MustString(t, l.Conn, "select pg_last_wal_replay_lsn()::text || ' ' || (pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn())::text")
		if strings.HasSuffix(at, " true") {
			return true
		}
		if at != last {
			last, still = at, time.Now()
		}
		return time.Since(still) > 2*time.Second
	})
	return l.wantConsistent(t, jobs)
}

// before is the entries acknowledged before t.
func before(entries []committed, t time.Time) []committed {
	var out []committed
	for _, e := range entries {
		if e.Time.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

// pg_terminate_backend on the workers' backends every 100 ms, passes in
// flight and LISTEN connections alike: the workers log each fault, reconnect
// and finish, with no acknowledged chunk lost or repeated.
func TestTerminateBackendStorm(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.slowOrders(t, 0.05)
	jobs := seedJobs(t, l, 5, 16)
	app := l.Name
	var workers []*clitest.Proc
	for _, name := range []string{"w1", "w2"} {
		all := append(l.globalsAs(app), append([]string{"--json", "worker", "--id", name, "--verbose"}, workerFlags...)...)
		workers = append(workers, clitest.Start(t, clitest.Options{Name: name}, all...))
	}
	for _, w := range workers {
		w.WaitLine(t, 0, 20*time.Second, readyLine)
	}

	// Every tick kills one backend of the workers: on two ticks of three one
	// inside a pass when there is one, else any (a LISTEN one, an idle one).
	storm := pgtest.Connect(t, pgtest.DSN())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var kills, inPass int
	var stormErr error
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			var pid *int32
			var passing bool
			if err := storm.QueryRow(ctx, `select pid, query like '%run_next_chunk%' and state = 'active' from pg_stat_activity
				where application_name = $1
				order by $2 and query like '%run_next_chunk%' and state = 'active' desc, random() limit 1`,
				app, n%3 != 2).Scan(&pid, &passing); errors.Is(err, pgx.ErrNoRows) {
				continue
			} else if err != nil {
				stormErr = err
				return
			}
			var killed bool
			if err := storm.QueryRow(ctx, "select pg_terminate_backend($1)", *pid).Scan(&killed); err != nil {
				stormErr = err
				return
			}
			if killed {
				kills++
				if passing {
					inPass++
				}
			}
		}
	})
	pgtest.WaitFor(t, 40*time.Second, "every job done under the storm", func() bool { return l.allDone(t) })
	close(stop)
	wg.Wait()
	if stormErr != nil {
		t.Fatal(stormErr)
	}
	if kills < 8 || inPass < 4 {
		t.Fatalf("the storm killed %d backends, %d of them inside a pass: too few to prove anything", kills, inPass)
	}
	stopWorkers(t, workers...)
	logged := append(workers[0].Lines(), workers[1].Lines()...)
	if !slices.ContainsFunc(logged, func(line string) bool {
		return clitest.ContainsAll(line, `"msg":"pass failed: nothing of it committed; retrying"`,
			`"reason":"the server ended the session (SQLSTATE 57P01): a restart, a crash or pg_terminate_backend"`)
	}) {
		t.Errorf("no pass failure with 57P01 logged under the storm:\n%s", strings.Join(logged, "\n"))
	}
	wantLedgerHeld(t, "after the storm", ledger(t, workers...), l.wantConsistent(t, jobs))
	l.wantFinished(t, jobs)
	t.Logf("the storm killed %d backends, %d inside a pass", kills, inPass)
}

// No free connection slot, at start and mid-run: a worker started while
// the server is full waits (53300, each attempt logged) and works once a
// slot is free; when the server fills up while it runs and it loses its
// connections, it commits nothing, logs the fault, and goes on once slots
// are free again.
func TestConnectionSlotsExhausted(t *testing.T) {
	t.Parallel()
	c := newCluster(t, localpg.Options{Settings: []string{"max_connections=12"}})
	l := c.lab(t, c.srv)
	l.slowOrders(t, 0.03)
	jobs := seedJobs(t, l, 6, 8)
	app := c.schema + "-w"

	held, release := holdConnections(t, c.srv)
	w := c.startWorker(t, c.srv.DSN(), app, "w1", workerFlags...)
	w.WaitLine(t, 0, 10*time.Second, `"msg":"waiting for the database"`, `"attempt":2,`,
		`"reason":"no free connection slot (SQLSTATE 53300, too many connections)"`)
	if got := l.progress(t); progressSum(got) != 0 {
		t.Fatalf("progress %v before the worker had a connection", got)
	}
	release()
	w.WaitLine(t, 0, 10*time.Second, readyLine)
	t.Logf("held %d connections: the worker waited until they were released", held)

	pgtest.WaitFor(t, 20*time.Second, "some chunks done", func() bool { return progressSum(l.progress(t)) >= 8 })
	// Fill the server again and end the worker's sessions, until it has none
	// and the server no free slot.
	var releases []func()
	mark := w.LineCount()
	fill := func() int {
		n, release := holdConnections(t, c.srv)
		releases = append(releases, release)
		return n
	}
	workerSessions := "select pid from pg_stat_activity where application_name = '" + app + "'"
	pgtest.WaitFor(t, 10*time.Second, "the worker without a connection on a full server", func() bool {
		fill()
		if pgtest.MustInt(t, l.Conn, "select count(*) from ("+workerSessions+") s") == 0 && fill() == 0 {
			return true
		}
		terminate(t, l.Conn, workerSessions)
		return false
	})
	w.WaitLine(t, mark, 10*time.Second, `"msg":"pass failed: nothing of it committed; retrying"`, "SQLSTATE 53300")
	full := l.progress(t)
	if l.allDone(t) {
		t.Fatal("every job finished before the server was full: the test proves nothing")
	}
	w.WaitLine(t, mark, 10*time.Second, `"msg":"listen: lost or refused; polling only until it is back"`)
	if got := l.progress(t); progressSum(got) != progressSum(full) {
		t.Fatalf("progress moved from %v to %v while the worker had no connection", full, got)
	}
	for _, r := range releases {
		r()
	}
	pgtest.WaitFor(t, 30*time.Second, "every job done once slots were free", func() bool { return l.allDone(t) })
	stopWorkers(t, w)
	wantLedgerHeld(t, "after the full server", ledger(t, w), l.wantConsistent(t, jobs))
	l.wantFinished(t, jobs)
	if n := readyCount(w); n != 1 {
		t.Errorf("the worker logged ready %d times, want once", n)
	}
}

// chunks drain through a server crash: it exits 1 with the error at once,
// while the server is still down (no hidden retry, as the contract says),
// having printed what it committed; after crash recovery, every chunk it
// reported is there, and a second drain finishes the job: each order changed
// exactly once.
func TestDrainThroughACrash(t *testing.T) {
	t.Parallel()
	c := newCluster(t, localpg.Options{Durable: true})
	l := c.lab(t, c.srv)
	l.slowOrders(t, 0.1)
	j := newSeeder(l, 7).job(t, "festival", 30, 3)
	l.register(t, j)
	app := c.schema + "-drain"
	args := []string{"--dsn", c.operator.DSN(c.srv.DSN()) + " application_name=" + app, "--schema", c.schema, "--json", "drain", j.ID}
	drain := clitest.Start(t, clitest.Options{Name: "drain"}, args...)
	pgtest.WaitFor(t, 20*time.Second, "3 chunks done and one in flight", func() bool {
		return l.nextIndex(t, j.ID) >= 9 && l.chunkInFlightAs(t, app)
	})
	if err := c.srv.Crash(); err != nil {
		t.Fatal(err)
	}
	r := drain.WaitWithin(t, 10*time.Second)
	lines := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
	// The server ends its sessions at once (it may send a warning first,
	// which is not an error): the client sees the connection end.
	if r.Code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "chunks: unexpected EOF (the server closed the connection: it crashed, restarted or failed over") && !strings.Contains(lines[0], "(SQLSTATE 57P0") {
		t.Fatalf("want drain to exit 1 with one error line while the server is down, got %v", r)
	}
	t.Logf("drain said: %s", lines[0])
	var first driver.DrainResult
	if err := json.Unmarshal([]byte(r.Stdout), &first); err != nil {
		t.Fatalf("drain's result: %v\n%v", err, r)
	}
	if err := c.srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	l = c.lab(t, c.srv)
	progress := l.wantConsistent(t, []job{j})
	k := progress[j.ID]
	if first.Calls < 3 || len(first.Processed) != 3*first.Calls || first.NextIndex != len(first.Processed) || first.Done {
		t.Fatalf("the first drain's result: %+v", first)
	}
	// The chunk in flight may have committed without drain hearing of it.
	if k != first.NextIndex && k != first.NextIndex+3 {
		t.Fatalf("recovered next_index %d; drain reported %d: want it, or one more chunk", k, first.NextIndex)
	}
	for i, id := range first.Processed {
		if id != j.Targets[i].ID {
			t.Fatalf("drain reported %v, want the job's first targets", first.Processed)
		}
	}

	second := clitest.Run(t, args...)
	var rest driver.DrainResult
	if err := json.Unmarshal([]byte(second.Stdout), &rest); second.Code != 0 || err != nil {
		t.Fatalf("the second drain: %v (%v)", second, err)
	}
	var want []int64
	for _, target := range j.Targets[k:] {
		want = append(want, target.ID)
	}
	if fmt.Sprint(rest.Processed) != fmt.Sprint(want) || !rest.Done || rest.NextIndex != len(j.Targets) {
		t.Fatalf("the second drain: %+v, want the ids %v and done", rest, want)
	}
	// drain does not look at the queue (a worker removes the finished job
	// from it), so wantFinished would not hold; the data must.
	if got := l.wantConsistent(t, []job{j}); got[j.ID] != len(j.Targets) {
		t.Fatalf("next_index %d after the second drain, want %d", got[j.ID], len(j.Targets))
	}
	t.Logf("drain exited 1 with %q after %d calls; recovered at %d; the second drain did %d calls",
		lines[0], first.Calls, k, rest.Calls)
}

// A permanent fault while the worker runs (here its SQL function is gone,
// as if the schema were dropped under it) is logged at error level, with
// the reason and what to do, and retried: once the function is back, the
// same worker goes on.
func TestPermanentFaultWhileRunning(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	all := append(l.Globals(), append([]string{"--json", "worker", "--id", "w1", "--verbose"}, workerFlags...)...)
	w := clitest.Start(t, clitest.Options{Name: "w1"}, all...)
	w.WaitLine(t, 0, 20*time.Second, readyLine)
	l.Exec(t, "alter function run_next_chunk(text, integer, integer, integer, text, boolean) rename to run_next_chunk_gone")
	w.WaitLine(t, 0, 10*time.Second, `"level":"ERROR"`,
		`"msg":"pass failed: nothing of it committed; retrying; this error does not go away by itself: fix its cause`,
		`"reason":"a chunks function or table is missing (SQLSTATE 42883): run chunks migrate for this schema"`)
	l.Exec(t, "alter function run_next_chunk_gone(text, integer, integer, integer, text, boolean) rename to run_next_chunk")
	jobs := seedJobs(t, l, 8, 2)
	pgtest.WaitFor(t, 20*time.Second, "the jobs done once the function is back", func() bool { return l.allDone(t) })
	stopWorkers(t, w)
	l.wantFinished(t, jobs)
}

// progress is each job's next_index.
func (l *lab) progress(t testing.TB) map[string]int {
	t.Helper()
	rows, _ := l.Conn.Query(ctx, "select job_id, next_index from jobs")
	out := map[string]int{}
	var id string
	var k int
	if _, err := pgx.ForEachRow(rows, []any{&id, &k}, func() error { out[id] = k; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// terminate ends the sessions whose pids the query returns
// (pg_terminate_backend) and waits until they are gone.
func terminate(t testing.TB, conn *pgx.Conn, pids string, args ...any) {
	t.Helper()
	rows, _ := conn.Query(ctx, pids, args...)
	list, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range list {
		var ok bool
		if err := conn.QueryRow(ctx, "select pg_terminate_backend($1)", pid).Scan(&ok); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.WaitFor(t, 10*time.Second, "the terminated sessions to end", func() bool {
		return pgtest.MustInt(t, conn, "select count(*) from pg_stat_activity where pid = any($1)", list) == 0
	})
}
