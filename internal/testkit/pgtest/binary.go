package pgtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// BinaryEnv carries the path of the chunks binary under test from the
// parent test process to the child (see [MainWithBinary]).
const BinaryEnv = "CHUNKS_TEST_BIN"

// Binary is the path of the chunks binary built by [MainWithBinary].
func Binary() string { return os.Getenv(BinaryEnv) }

// MainWithBinary is [Main] for tests that run the built chunks command as
// separate processes. It builds cmd/chunks once into a temporary folder.
// Main ends the process with os.Exit, so nothing could remove that folder
// after it; instead the test binary runs itself again as a child (with the
// binary's path in $CHUNKS_TEST_BIN), waits for it, removes the folder and
// exits with the child's status. The child runs the tests under Main.
func MainWithBinary(m *testing.M) {
	WithBinary(func() int { return run(m) })
}

// WithBinary is [MainWithBinary] for a TestMain of its own (one that starts
// its own servers, say): in the child, with the binary built, it exits
// with main's status.
func WithBinary(main func() int) {
	if Binary() != "" {
		os.Exit(main())
	}
	os.Exit(buildAndRunChild())
}

func buildAndRunChild() int {
	dir, err := os.MkdirTemp("", "chunks-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	code := buildAndRun(dir)
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: remove the built binary:", err)
		return max(code, 1)
	}
	return code
}

func buildAndRun(dir string) int {
	path := filepath.Join(dir, "chunks")
	build := exec.Command("go", "build", "-o", path, "github.com/chunks-dev/chunks/cmd/chunks")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: go build cmd/chunks:", err)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	child := exec.Command(self, os.Args[1:]...)
	child.Env = append(os.Environ(), BinaryEnv+"="+path)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	// An interrupt reaches the child too (same process group): let it stop
	// its tests, its processes and its server, and clean up after it.
	signal.Notify(make(chan os.Signal, 1), os.Interrupt, syscall.SIGTERM)
	if err := child.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() > 0 {
			return exit.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	return 0
}

// CleanEnv is this process's environment for a chunks process under test:
// without the variables that would choose a database or schema behind the
// test's back, nor the binary's own path.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "CHUNKS_DSN", "DATABASE_URL", "CHUNKS_SCHEMA", BinaryEnv:
			continue
		}
		env = append(env, kv)
	}
	return env
}
