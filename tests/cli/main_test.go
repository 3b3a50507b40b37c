// Package cli tests the built chunks binary as a user meets it: separate
// processes, their exit status (or the signal that killed them), stdout and
// stderr, and the rows they leave in a real PostgreSQL.
//
// TestMain builds cmd/chunks once into a temporary folder. pgtest.Main ends
// the process with os.Exit, so nothing could remove that folder after it;
// instead the test binary runs itself again as a child (with the binary's
// path in $CHUNKS_CLI_TEST_BIN), waits for it, removes the folder and exits
// with the child's status. The child runs the tests under pgtest.Main.
package cli

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
const binEnv = "CHUNKS_CLI_TEST_BIN"

// bin is the path of the chunks binary under test.
var bin string

func TestMain(m *testing.M) {
	if bin = os.Getenv(binEnv); bin != "" {
		pgtest.Main(m)
		return
	}
	os.Exit(buildAndRunChild())
}

// buildAndRunChild builds chunks into a temporary folder, runs this test
// binary again with the same arguments, and removes the folder afterwards.
func buildAndRunChild() int {
	dir, err := os.MkdirTemp("", "chunks-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cli test:", err)
		return 1
	}
	defer os.RemoveAll(dir)

	path := filepath.Join(dir, "chunks")
	build := exec.Command("go", "build", "-o", path, "github.com/chunks-dev/chunks/cmd/chunks")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "cli test: go build cmd/chunks:", err)
		return 1
	}

	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cli test:", err)
		return 1
	}
	child := exec.Command(self, os.Args[1:]...)
	child.Env = append(os.Environ(), binEnv+"="+path)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	// An interrupt reaches the child too (same process group): let it stop
	// its tests and its server, and clean up after it.
	signal.Notify(make(chan os.Signal, 1), os.Interrupt, syscall.SIGTERM)
	if err := child.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() > 0 {
			return exit.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "cli test:", err)
		return 1
	}
	return 0
}
