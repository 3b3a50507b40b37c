package localpg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Kill stops the server the hardest way: SIGKILL to the postmaster and to
// every server process it started, as the kernel's OOM killer or a lost
// machine would, with no shutdown of any kind (Crash's immediate shutdown
// still lets the postmaster stop its children). It returns when all of them
// are gone. The folder stays, and [Server.Restart] starts the server again
// with crash recovery: what was committed is there when the server is
// [Options.Durable]. Killing a server that is not running is an error.
//
// Each server process leads a process group of its own (PostgreSQL calls
// setsid), so the postmaster's group is not enough: Kill stops the
// postmaster (SIGSTOP, so that it starts no new process), lists its
// children in /proc, and SIGKILLs them and it.
func (s *Server) Kill() error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	p := s.current()
	if p == nil || !p.running() {
		return fmt.Errorf("kill %v: it is not running", s)
	}
	pm := p.cmd.Process.Pid
	if err := syscall.Kill(pm, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("kill %v: stop the postmaster: %w", s, err)
	}
	children, err := childrenOf(pm)
	errs := []error{err}
	for _, pid := range append(children, pm) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill %d: %w", pid, err))
		}
	}
	<-p.exited
	return errors.Join(append(errs, waitGone(children))...)
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) ([]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // it exited meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		if child, err := strconv.Atoi(filepath.Base(filepath.Dir(path))); err == nil {
			out = append(out, child)
		}
	}
	return out, nil
}

// waitGone waits until none of the processes is left (each one reaped).
func waitGone(pids []int) error {
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for {
			err := syscall.Kill(pid, 0)
			if errors.Is(err, syscall.ESRCH) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("server process %d still there 10s after SIGKILL", pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}
