package pgtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// skipped lists, for the summary that [ReportSkipped] prints, each test that
// [RequireTool] skipped.
var skipped struct {
	sync.Mutex
	lines []string
}

// InCI reports whether the tests run in CI: $CI is "true", as CI services set it.
func InCI() bool { return os.Getenv("CI") == "true" }

// RequireTool is the one rule for tests that need an optional tool (pgTAP,
// pg_prove, plpgsql_check, a browser). When missing is nil the tool is there
// and the test goes on. Otherwise the test is skipped with one line that
// names the tool and the Debian package that provides it; under CI (see
// [InCI]) it fails instead, so CI can never pass by skipping.
//
// missing says what is absent, e.g. `exec: "pg_prove": executable file not
// found in $PATH`; debPackage is the package to install.
func RequireTool(t testing.TB, missing error, tool, debPackage string) {
	t.Helper()
	if missing == nil {
		return
	}
	line := fmt.Sprintf("%s is not installed (%v): apt-get install -y %s", tool, missing, debPackage)
	if InCI() {
		t.Fatalf("%s; CI=true, so a missing tool fails the test instead of skipping it", line)
	}
	skipped.Lock()
	skipped.lines = append(skipped.lines, t.Name()+": "+line)
	skipped.Unlock()
	t.Skip(line)
}

// ReportSkipped says which tests [RequireTool] skipped. go test shows
// nothing of a passing package but its "ok" line, so the summary goes to
// the stderr of the go command that runs this test binary, when that is the
// parent process, and to this process's stderr otherwise. [Main] calls it
// after the tests; a TestMain of its own calls it after m.Run.
func ReportSkipped() {
	skipped.Lock()
	defer skipped.Unlock()
	if len(skipped.lines) == 0 {
		return
	}
	var b strings.Builder
	for _, l := range skipped.lines {
		fmt.Fprintf(&b, "pgtest: SKIPPED %s %s\n", filepath.Base(os.Args[0]), l)
	}
	if err := writeToGoCommand(b.String()); err != nil {
		fmt.Fprint(os.Stderr, b.String())
	}
}

// writeToGoCommand writes s to the stderr of the go command that runs this
// test binary: the parent process, or the grandparent when this is the child
// that [MainWithBinary] starts.
func writeToGoCommand(s string) error {
	pid := os.Getppid()
	for range 2 {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(comm)) == "go" {
			f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/2", pid), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			_, err = f.WriteString(s)
			return errors.Join(err, f.Close())
		}
		if pid, err = parentOf(pid); err != nil {
			return err
		}
	}
	return errors.New("no go command among the parent processes")
}

// parentOf reads the parent process id of pid from /proc.
func parentOf(pid int) (int, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no PPid", pid)
}
