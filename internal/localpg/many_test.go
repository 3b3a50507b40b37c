package localpg

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// StartMany starts servers from one initdb, each with its own port,
// folder and settings; Kill SIGKILLs every process of one at once, and a
// durable one has its commit after Restart (crash recovery ran).
func TestStartManyAndKill(t *testing.T) {
	t.Parallel()
	needBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	servers, err := StartMany(ctx, Options{Durable: true}, Options{Settings: []string{"work_mem=7MB"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		t.Cleanup(func() {
			if err := s.Stop(); err != nil {
				t.Errorf("stop %v: %v", s, err)
			}
		})
	}
	durable, other := servers[0], servers[1]
	if durable.Port == other.Port || durable.Dir == other.Dir {
		t.Fatalf("two servers on port %d and %d, in %s and %s", durable.Port, other.Port, durable.Dir, other.Dir)
	}
	a, b := connect(t, durable), connect(t, other)
	if got := query[string](t, a, "show fsync") + " " + query[string](t, b, "show fsync") + " " + query[string](t, b, "show work_mem"); got != "on off 7MB" {
		t.Fatalf("fsync of the durable one, fsync and work_mem of the other: %s; want on off 7MB", got)
	}
	mustExec(t, a, "create table t (v int)")
	mustExec(t, a, "insert into t values (1)")
	pid := durable.PID()
	children, err := childrenOf(pid)
	if err != nil || len(children) < 3 { // checkpointer, writers, launchers, our backend...
		t.Fatalf("children of the postmaster: %v, %v", children, err)
	}
	if err := durable.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(children, pid) {
		if processAlive(t, p) || portOpen(durable.Port) {
			t.Fatalf("server process %d outlived Kill", p)
		}
	}
	if err := durable.Kill(); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("Kill of a killed server: %v", err)
	}
	if err := durable.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rows(t, connect(t, durable), 1); n != 1 || !strings.Contains(readLog(t, durable), recoveryMessage) {
		t.Fatalf("after Kill and Restart: %d rows, recovery in the log: %v", n, strings.Contains(readLog(t, durable), recoveryMessage))
	}
	if query[int](t, b, "select 1") != 1 {
		t.Fatal("the other server")
	}
}

// processAlive says whether process pid exists.
func processAlive(t *testing.T, pid int) bool {
	t.Helper()
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("kill -0 %d: %v", pid, err)
	}
	return err == nil
}
