package main

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// The in-process tests run the commands' options, Validate and run, and
// the whole command line (run), in this process against a throwaway
// server. What needs a process of its own (signals, crashes, exit codes of
// the binary) is tested in tests/cli and tests/fleet.
func TestMain(m *testing.M) { pgtest.Main(m) }
