package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// peakRSSEvery is how often peakRSS reads the child's high-water mark.
const peakRSSEvery = time.Millisecond

// peakRSS runs cmd and returns its own peak resident memory in MB, with
// what it wrote to stdout and stderr. It reads VmHWM in /proc/<pid>/status
// every millisecond while the child runs and keeps the largest: the
// high-water mark of the child's own address space, which starts at zero
// at exec. Not the ru_maxrss of wait4 (ProcessState.SysUsage): on Linux
// that survives exec, and os/exec starts a child with vfork (CLONE_VM), so
// a child's ru_maxrss is never less than the parent's peak at the time, the
// bench's 40 MB and more, whatever the child uses. What the last
// millisecond before exit adds can be missed.
func peakRSS(cmd *exec.Cmd) (mb float64, out []byte, err error) {
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	tick := time.NewTicker(peakRSSEvery)
	defer tick.Stop()
	for {
		// Read before waiting: a child that exits within a millisecond is
		// still read once (or found gone, and then Wait says how it ended).
		if kb, ok := vmHWM(status); ok {
			peak = max(peak, kb)
		}
		select {
		case err := <-done:
			if peak == 0 && err == nil {
				err = fmt.Errorf("%s: exited before its memory could be read", cmd.Path)
			}
			return float64(peak) / 1024, buf.Bytes(), err
		case <-tick.C:
		}
	}
}

// vmHWM is the VmHWM line of a /proc/<pid>/status file, in kB; false when
// the file or the line is gone (the process has exited).
func vmHWM(path string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}
