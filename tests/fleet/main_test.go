// Package fleet tests fleet mode end to end: the queue's SQL functions on a
// real PostgreSQL, the fleet package in process, and chunks worker as real
// processes that are started together, killed with SIGKILL, stopped with
// SIGTERM and woken by NOTIFY or by polling.
//
// TestMain builds cmd/chunks once into a temporary folder, as tests/cli
// does: pgtest.Main ends the process with os.Exit, so the test binary runs
// itself again as a child (with the binary's path in $CHUNKS_FLEET_TEST_BIN),
// waits for it, removes the folder and exits with the child's status.
package fleet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/chunks-dev/chunks/internal/pgtest"
)

// binEnv carries the built binary's path from the parent to the child.
const binEnv = "CHUNKS_FLEET_TEST_BIN"

// bin is the path of the chunks binary under test.
var bin string

func TestMain(m *testing.M) {
	if bin = os.Getenv(binEnv); bin != "" {
		pgtest.Main(m)
		return
	}
	os.Exit(buildAndRunChild())
}

func buildAndRunChild() int {
	dir, err := os.MkdirTemp("", "chunks-fleet-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet test:", err)
		return 1
	}
	defer os.RemoveAll(dir)

	path := filepath.Join(dir, "chunks")
	build := exec.Command("go", "build", "-o", path, "github.com/chunks-dev/chunks/cmd/chunks")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "fleet test: go build cmd/chunks:", err)
		return 1
	}

	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet test:", err)
		return 1
	}
	child := exec.Command(self, os.Args[1:]...)
	child.Env = append(os.Environ(), binEnv+"="+path)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	// An interrupt reaches the child too (same process group): let it stop
	// its tests, its workers and its server, and clean up after it.
	signal.Notify(make(chan os.Signal, 1), os.Interrupt, syscall.SIGTERM)
	if err := child.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() > 0 {
			return exit.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "fleet test:", err)
		return 1
	}
	return 0
}
