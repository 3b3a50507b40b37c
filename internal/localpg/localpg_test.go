package localpg

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// These tests start real servers. They skip when the machine has no
// PostgreSQL binaries, and the standby tests skip when BinDir lacks
// pg_basebackup (the @embedded-postgres builds).

func needBinaries(t *testing.T) {
	t.Helper()
	if _, err := FindBinDir(); err != nil {
		t.Skip(err)
	}
}

func start(t *testing.T, opts Options) *Server {
	t.Helper()
	needBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop %v: %v", s, err)
		}
	})
	return s
}

func startStandby(t *testing.T, s *Server, opts StandbyOptions) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	sb, err := s.StartStandby(ctx, opts)
	if errors.Is(err, ErrMissingBinary) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("start standby: %v", err)
	}
	t.Logf("standby %s on port %d started in %v", sb.Name(), sb.Port, time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := sb.Stop(); err != nil {
			t.Errorf("stop %v: %v", sb, err)
		}
	})
	return sb
}

func connect(t *testing.T, s *Server) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), s.DSN())
	if err != nil {
		t.Fatalf("connect to %v: %v", s, err)
	}
	t.Cleanup(func() {
		if conn.IsClosed() {
			return
		}
		if err := conn.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return conn
}

func mustExec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func query[T any](t *testing.T, conn *pgx.Conn, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// waitFor polls cond every 20ms for at most timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// commitLSN inserts v into table t on conn and returns a WAL position at or
// after the end of its commit record. The WAL switch after it makes sure the
// commit is sent to the standbys at once, and that there is WAL after the
// commit record for them to receive.
func commitLSN(t *testing.T, conn *pgx.Conn, v int) string {
	t.Helper()
	mustExec(t, conn, "insert into t values ($1)", v)
	lsn := query[string](t, conn, "select pg_current_wal_insert_lsn()::text")
	mustExec(t, conn, "select pg_switch_wal()")
	return lsn
}

func rows(t *testing.T, conn *pgx.Conn, v int) int {
	t.Helper()
	return query[int](t, conn, "select count(*)::int from t where v = $1", v)
}

// portOpen says whether something accepts TCP connections on the port.
func portOpen(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	_ = c.Close() // only probing
	return true
}

// groupAlive says whether any process is left in process group pgid.
func groupAlive(t *testing.T, pgid int) bool {
	t.Helper()
	err := syscall.Kill(-pgid, 0)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("kill -0 -%d: %v", pgid, err)
	}
	return err == nil
}

func readLog(t *testing.T, s *Server) string {
	t.Helper()
	b, err := os.ReadFile(s.Dir + "/server.log")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantGone(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("folder %s is still there (stat: %v)", dir, err)
	}
}

const recoveryMessage = "was not properly shut down; automatic recovery in progress"

// TestCrashRestartKeepsCommittedData crashes a durable server after a
// commit and restarts it: crash recovery runs, on the same port, and the row
// is there.
func TestCrashRestartKeepsCommittedData(t *testing.T) {
	t.Parallel()
	s := start(t, Options{Durable: true})
	conn := connect(t, s)
	mustExec(t, conn, "create table t (v int)")
	mustExec(t, conn, "insert into t values (42)")
	port, pid := s.Port, s.PID()
	if !groupAlive(t, pid) || !portOpen(port) {
		t.Fatal("the server is not running before the crash")
	}

	began := time.Now()
	if err := s.Crash(); err != nil {
		t.Fatalf("crash: %v", err)
	}
	t.Logf("crash took %v", time.Since(began).Round(time.Millisecond))
	if groupAlive(t, pid) {
		t.Fatal("server processes are left after Crash")
	}
	if portOpen(port) {
		t.Fatal("the port still accepts connections after Crash")
	}
	if _, err := conn.Exec(context.Background(), "select 1"); err == nil {
		t.Fatal("a session survived the crash")
	}
	if err := s.Crash(); err == nil {
		t.Fatal("crashing a server that is down did not fail")
	}

	began = time.Now()
	if err := s.Restart(context.Background()); err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Logf("restart (crash recovery) took %v", time.Since(began).Round(time.Millisecond))
	if s.Port != port {
		t.Fatalf("port %d after restart, want %d", s.Port, port)
	}
	if s.PID() == pid {
		t.Fatal("the same postmaster after restart")
	}
	if !strings.Contains(readLog(t, s), recoveryMessage) {
		t.Fatalf("server.log does not say that crash recovery ran:\n%s", readLog(t, s))
	}
	if n := rows(t, connect(t, s), 42); n != 1 {
		t.Fatalf("%d rows of the committed 42 after crash and restart, want 1", n)
	}
}

// TestDurability checks the settings of Options.Durable and their
// inheritance by a standby, and Options.Settings' quoting.
func TestDurability(t *testing.T) {
	t.Parallel()
	settings := func(s *Server) string {
		return query[string](t, connect(t, s), `select concat_ws(' ', current_setting('fsync'),
			current_setting('synchronous_commit'), current_setting('full_page_writes'),
			current_setting('work_mem'), current_setting('application_name'))`)
	}
	fast := start(t, Options{Settings: []string{"work_mem=12MB", `application_name=it's a\b`}})
	durable := start(t, Options{Durable: true})
	if got, want := settings(fast), `off off off 12MB it's a\b`; got != want {
		t.Errorf("non-durable server: %q, want %q", got, want)
	}
	if got, want := settings(durable), "on on on 4MB "; got != want {
		t.Errorf("durable server: %q, want %q", got, want)
	}
	if _, err := Start(context.Background(), Options{Settings: []string{"fsync"}}); err == nil {
		t.Error("a setting without = was accepted")
	}

	inherited := startStandby(t, fast, StandbyOptions{})
	if got, want := settings(inherited), `off off off 12MB it's a\b`; got != want {
		t.Errorf("standby of the non-durable server: %q, want %q", got, want)
	}
	on := true
	overridden := startStandby(t, fast, StandbyOptions{Durable: &on, Settings: []string{"work_mem=13MB"}})
	if got, want := settings(overridden), `on on on 13MB it's a\b`; got != want {
		t.Errorf("durable standby of the non-durable server: %q, want %q", got, want)
	}
	if _, err := fast.StartStandby(context.Background(), StandbyOptions{Name: "standby1"}); err == nil ||
		!strings.Contains(err.Error(), "already streams") {
		t.Errorf("a second standby named standby1: %v, want an error", err)
	}
	if inherited.Name() != "standby1" || overridden.Name() != "standby2" {
		t.Errorf("default standby names %q and %q, want standby1 and standby2", inherited.Name(), overridden.Name())
	}
}

// TestShutdownRestartStop restarts a cleanly shut down server, then checks
// that Stop works after Crash and removes the folder, and that a stopped
// server cannot be restarted.
func TestShutdownRestartStop(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	s, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	pid := s.PID()
	if err := s.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if groupAlive(t, pid) || portOpen(s.Port) {
		t.Fatal("the server still runs after Shutdown")
	}
	if err := s.Shutdown(); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
	if err := s.Restart(context.Background()); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if strings.Contains(readLog(t, s), recoveryMessage) {
		t.Fatal("crash recovery ran after a clean shutdown")
	}
	// Restart of a running server: a clean restart, too.
	pid = s.PID()
	if err := s.Restart(context.Background()); err != nil {
		t.Fatalf("restart of the running server: %v", err)
	}
	if s.PID() == pid || groupAlive(t, pid) {
		t.Fatal("Restart of a running server did not replace its postmaster")
	}
	if err := s.Crash(); err != nil {
		t.Fatalf("crash: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("stop after crash: %v", err)
	}
	wantGone(t, s.Dir)
	if err := s.Stop(); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	if err := s.Restart(context.Background()); err == nil {
		t.Fatal("a stopped server restarted")
	}
}

// TestStandbyReplays inserts a row on the primary and reads it on the
// standby, which is read-only and streams.
func TestStandbyReplays(t *testing.T) {
	t.Parallel()
	primary := start(t, Options{})
	p := connect(t, primary)
	mustExec(t, p, "create table t (v int)")
	sb := startStandby(t, primary, StandbyOptions{Name: "replica_a"})
	if sb.Port == primary.Port || sb.Dir == primary.Dir {
		t.Fatalf("standby shares port or folder with the primary: %d %s", sb.Port, sb.Dir)
	}
	st := connect(t, sb)
	if !query[bool](t, st, "select pg_is_in_recovery()") {
		t.Fatal("the standby is not in recovery")
	}
	state := query[string](t, p, "select state || ' ' || sync_state from pg_stat_replication where application_name = 'replica_a'")
	if state != "streaming async" {
		t.Fatalf("pg_stat_replication: %q, want streaming async", state)
	}

	lsn := commitLSN(t, p, 7)
	waitFor(t, 10*time.Second, "replay on the standby", func() bool {
		return query[bool](t, st, "select pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn)
	})
	if n := rows(t, st, 7); n != 1 {
		t.Fatalf("%d rows of 7 on the standby after replay, want 1", n)
	}
	_, err := st.Exec(context.Background(), "insert into t values (8)")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "25006" {
		t.Fatalf("insert on the standby: %v, want read_only_sql_transaction", err)
	}
}

// TestApplyDelay: with a 2s apply delay, the standby has received a commit
// but not applied it, and applies it after the delay.
func TestApplyDelay(t *testing.T) {
	t.Parallel()
	const delay = 2 * time.Second
	primary := start(t, Options{})
	p := connect(t, primary)
	mustExec(t, p, "create table t (v int)")
	sb := startStandby(t, primary, StandbyOptions{ApplyDelay: delay})
	st := connect(t, sb)
	if got := query[string](t, st, "show recovery_min_apply_delay"); got != "2s" {
		t.Fatalf("recovery_min_apply_delay %q, want 2s", got)
	}
	committed := time.Now()
	lsn := commitLSN(t, p, 1)
	waitFor(t, time.Second, "the standby receives the commit", func() bool {
		return query[bool](t, st, "select pg_last_wal_receive_lsn() >= $1::pg_lsn", lsn)
	})
	if query[bool](t, st, "select pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn) {
		t.Fatal("the standby replayed the commit at once, despite the delay")
	}
	if n := rows(t, st, 1); n != 0 {
		t.Fatalf("%d rows of 1 on the standby right after the commit, want 0", n)
	}
	waitFor(t, delay+5*time.Second, "the delayed commit on the standby", func() bool {
		return rows(t, st, 1) == 1
	})
	if waited := time.Since(committed); waited < delay-100*time.Millisecond {
		t.Fatalf("the commit appeared after %v, before the %v delay", waited, delay)
	}
	if !query[bool](t, st, "select pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn) {
		t.Fatal("the row is visible but the replay position is before its commit")
	}
}

// TestSetApplyDelay holds a commit back by raising the delay at run time and
// lets it through by lowering it again.
func TestSetApplyDelay(t *testing.T) {
	t.Parallel()
	primary := start(t, Options{})
	p := connect(t, primary)
	mustExec(t, p, "create table t (v int)")
	sb := startStandby(t, primary, StandbyOptions{})
	st := connect(t, sb)
	ctx := context.Background()
	if err := sb.SetApplyDelay(ctx, time.Hour); err != nil {
		t.Fatalf("set apply delay: %v", err)
	}
	// SetApplyDelay returns once its own session sees the setting; another
	// session rereads it when its backend handles the reload's SIGHUP,
	// which on a loaded machine may come a moment later.
	waitFor(t, 5*time.Second, "the standby's other session sees recovery_min_apply_delay 1h", func() bool {
		return query[string](t, st, "show recovery_min_apply_delay") == "1h"
	})
	lsn := commitLSN(t, p, 2)
	waitFor(t, 5*time.Second, "the standby receives the commit", func() bool {
		return query[bool](t, st, "select pg_last_wal_receive_lsn() >= $1::pg_lsn", lsn)
	})
	if query[bool](t, st, "select pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn) || rows(t, st, 2) != 0 {
		t.Fatal("the standby applied the commit despite a delay of an hour")
	}
	if err := sb.SetApplyDelay(ctx, 0); err != nil {
		t.Fatalf("set apply delay 0: %v", err)
	}
	waitFor(t, 5*time.Second, "the held-back commit after the delay is lifted", func() bool {
		return rows(t, st, 2) == 1
	})
	if err := primary.SetApplyDelay(ctx, time.Second); err == nil {
		t.Fatal("SetApplyDelay on a primary did not fail")
	}
}

// TestSynchronousStandby: the primary lists a synchronous standby as sync
// and its commits wait while the standby is down.
func TestSynchronousStandby(t *testing.T) {
	t.Parallel()
	primary := start(t, Options{}) // non-durable: synchronous_commit must be turned on
	p := connect(t, primary)
	mustExec(t, p, "create table t (v int)")
	sb := startStandby(t, primary, StandbyOptions{Name: "sync1", Synchronous: true})
	if got := query[string](t, p, "select sync_state from pg_stat_replication where application_name = 'sync1'"); got != "sync" {
		t.Fatalf("sync_state %q, want sync", got)
	}
	if got := query[string](t, p, "select current_setting('synchronous_standby_names') || ' ' || current_setting('synchronous_commit')"); got != `"sync1" on` {
		t.Fatalf("primary's synchronous_standby_names and synchronous_commit: %q", got)
	}

	// A standby copied from this primary must not inherit its
	// synchronous_standby_names: promoted, it would wait for sync1.
	other := startStandby(t, primary, StandbyOptions{})
	if got := query[string](t, connect(t, other), "show synchronous_standby_names"); got != "" {
		t.Fatalf("second standby's synchronous_standby_names %q, want empty", got)
	}

	// While the synchronous standby is down, a commit waits.
	if err := sb.Crash(); err != nil {
		t.Fatal(err)
	}
	waiting := connect(t, primary)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err := waiting.Exec(ctx, "insert into t values (3)")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
		t.Fatalf("a commit with the synchronous standby down: %v, want it to wait past the 1s deadline", err)
	}
	if err := sb.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.Exec(ctx, "insert into t values (4)"); err != nil {
		t.Fatalf("a commit after the synchronous standby restarted: %v", err)
	}
	// Synchronous commit means flushed on the standby, not yet applied; the
	// row is applied soon after.
	st := connect(t, sb)
	waitFor(t, 5*time.Second, "the row on the synchronous standby", func() bool { return rows(t, st, 4) == 1 })
}

// TestPromote makes a standby a writable primary of its own.
func TestPromote(t *testing.T) {
	t.Parallel()
	primary := start(t, Options{})
	p := connect(t, primary)
	mustExec(t, p, "create table t (v int)")
	sb := startStandby(t, primary, StandbyOptions{})
	st := connect(t, sb)
	lsn := commitLSN(t, p, 5)
	waitFor(t, 10*time.Second, "replay on the standby", func() bool {
		return query[bool](t, st, "select pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn)
	})

	ctx := context.Background()
	began := time.Now()
	if err := sb.Promote(ctx); err != nil {
		t.Fatalf("promote: %v", err)
	}
	t.Logf("promotion took %v", time.Since(began).Round(time.Millisecond))
	if query[bool](t, st, "select pg_is_in_recovery()") {
		t.Fatal("still in recovery after Promote")
	}
	mustExec(t, st, "insert into t values (6)")
	if rows(t, st, 5) != 1 || rows(t, st, 6) != 1 {
		t.Fatal("the promoted standby lacks the replicated row or its own")
	}
	if rows(t, p, 6) != 0 {
		t.Fatal("the old primary got the promoted standby's row")
	}
	if err := primary.Promote(ctx); err == nil {
		t.Fatal("promoting a primary did not fail")
	}
	if err := sb.SetApplyDelay(ctx, time.Second); err == nil {
		t.Fatal("SetApplyDelay on a promoted standby did not fail")
	}
}

// TestStopRemovesFolders: a standby's Stop removes its folder and leaves the
// primary running; the primary's Stop removes its own.
func TestStopRemovesFolders(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	primary, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := primary.StartStandby(context.Background(), StandbyOptions{})
	if errors.Is(err, ErrMissingBinary) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(errors.Join(err, primary.Stop()))
	}
	pid := sb.PID()
	if err := sb.Stop(); err != nil {
		t.Fatalf("stop standby: %v", err)
	}
	wantGone(t, sb.Dir)
	if groupAlive(t, pid) {
		t.Fatal("standby processes are left after Stop")
	}
	if _, err := os.Stat(primary.Dir); err != nil {
		t.Fatalf("the standby's Stop touched the primary's folder: %v", err)
	}
	if n := query[int](t, connect(t, primary), "select count(*)::int from pg_stat_replication"); n != 0 {
		t.Fatalf("%d standbys on the primary after Stop, want 0", n)
	}
	pid = primary.PID()
	if err := primary.Stop(); err != nil {
		t.Fatalf("stop primary: %v", err)
	}
	wantGone(t, primary.Dir)
	if groupAlive(t, pid) {
		t.Fatal("primary processes are left after Stop")
	}
}

// TestMissingBasebackup: without pg_basebackup in BinDir, StartStandby says
// so, before it touches anything.
func TestMissingBasebackup(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	_, err := (&Server{BinDir: bin}).StartStandby(context.Background(), StandbyOptions{})
	if !errors.Is(err, ErrMissingBinary) || !strings.Contains(err.Error(), "pg_basebackup") || !strings.Contains(err.Error(), bin) {
		t.Fatalf("StartStandby without pg_basebackup: %v", err)
	}
}

const helperEnv = "LOCALPG_TEST_HELPER"

// TestRestartedServerDiesWithProcess runs a process that starts, crashes and
// restarts a server, kills that process, and checks that the restarted
// server goes with it (Pdeathsig on the new postmaster too).
func TestRestartedServerDiesWithProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		helper()
		return
	}
	t.Parallel()
	needBinaries(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestRestartedServerDiesWithProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			if err := cmd.Process.Kill(); err != nil {
				t.Error(err)
			}
			_ = cmd.Wait() // the kill's "signal: killed"
		}
	})
	var pid, port int
	var dir string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "localpg-helper %d %d %s", &pid, &port, &dir); err == nil {
			break
		}
	}
	if pid == 0 {
		t.Fatalf("the helper did not report its server (%v)", sc.Err())
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	if !portOpen(port) {
		t.Fatal("the helper's restarted server does not accept connections")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed = true
	if err := cmd.Wait(); err == nil {
		t.Fatal("the killed helper exited 0")
	}
	waitFor(t, 10*time.Second, "the restarted postmaster dies with the helper", func() bool {
		return processGone(pid) && !portOpen(port)
	})
}

// processGone says whether pid has exited (a zombie has).
func processGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// helper is the process of TestRestartedServerDiesWithProcess: it reports
// its restarted server and waits to be killed.
func helper() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{})
	if err == nil {
		if err = s.Crash(); err == nil {
			err = s.Restart(ctx)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	fmt.Printf("localpg-helper %d %d %s\n", s.PID(), s.Port, s.Dir)
	<-ctx.Done() // killed long before
	os.Exit(3)
}
