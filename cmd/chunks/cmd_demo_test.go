package main

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// The demo's whole story (a throwaway server, child processes of the
// chunks binary) runs in tests/cli; here its options, its validation, and
// its refusal of a schema that exists, told through out.
func TestDemoOptions(t *testing.T) {
	t.Setenv("CHUNKS_DSN", "host=elsewhere")
	t.Setenv("CHUNKS_SCHEMA", "yours")
	if got := *parsed(t, parseDemo, "demo", "--keep"); got != (demoOptions{Keep: true}) {
		t.Errorf("demo --keep (the environment's DSN and schema ignored): got %+v", got)
	}
	if got := *parsed(t, parseDemo, "demo", "--dsn", "dbname=x", "--schema", "s"); got != (demoOptions{DSN: "dbname=x", OnDSN: true, Schema: "s"}) {
		t.Errorf("demo on a DSN: got %+v", got)
	}
	wantInvalid(t, &demoOptions{Keep: true, OnDSN: true, DSN: "dbname=x"}, "demo --keep keeps the throwaway server, and with --dsn there is none")
	wantInvalid(t, &demoOptions{Schema: "a-b"}, "schema")
	wantExit(t, chunksIn(t, nil, "", "demo", "x", "y"), 2, `chunks: usage: demo takes no arguments, got ["x" "y"]`)
	wantExit(t, chunksIn(t, nil, "", "--dsn", "dbname=x", "demo", "--keep"), 2, "chunks: usage: demo --keep keeps the throwaway server")
}

func TestDemoRefusesAnExistingSchema(t *testing.T) {
	l := clitest.NewLab(t)
	r := chunksIn(t, l, "", "demo")
	if r.Code != 3 || r.Stdout != "\n▸ Installing chunks into schema "+l.Name+"\n" ||
		r.Stderr != "chunks: conflict: schema "+l.Name+": already exists; the demo works in a new schema only\n" {
		t.Errorf("want the first step on stdout and the conflict, got %v", r)
	}
}
