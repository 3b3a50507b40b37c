package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// writeFile writes content to a new file named name in the test's own
// directory and returns its path.
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testPlan is the plan of job jobID of tenant acme over orders 1..n
// (revision 1, qty 1), size per chunk.
func testPlan(jobID string, n, size int) driver.Plan {
	plan := driver.Plan{JobID: jobID, Tenant: "acme", ChunkSize: size, AllowPartial: true}
	for i := 1; i <= n; i++ {
		plan.Targets = append(plan.Targets, driver.Target{ID: int64(i), Revision: 1, Qty: 1})
	}
	return plan
}

// wantRunErr fails unless run, on options that pass Validate, returned an
// error of kind (nil: any) whose text is want, and returns what it printed.
func wantRunErr[O options](t testing.TB, run runFunc[O], d deps, o O, kind error, want string) string {
	t.Helper()
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate(%+v): %v", o, err)
	}
	var out bytes.Buffer
	err := run(ctx, d, o, &out)
	if err == nil || (kind != nil && !errors.Is(err, kind)) || err.Error() != want {
		t.Fatalf("run(%+v): want the error %q (%v), got %v", o, want, kind, err)
	}
	return out.String()
}

// wantExitOut fails unless r exited with code, printed want on stdout and
// one line holding every part on stderr.
func wantExitOut(t testing.TB, r clitest.Result, code int, want string, parts ...string) {
	t.Helper()
	if r.Code != code || r.Stdout != want || strings.Count(r.Stderr, "\n") != 1 || !clitest.ContainsAll(r.Stderr, parts...) {
		t.Fatalf("want exit %d, stdout %q and one stderr line holding %q, got %v", code, want, parts, r)
	}
}

// outputHolding waits (pgtest.WaitFor, up to 10 s) until o holds part, and
// returns what it holds.
func outputHolding(t testing.TB, o *clitest.Output, part string) string {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the output: %q", o.String())
		}
	})
	pgtest.WaitFor(t, 10*time.Second, fmt.Sprintf("%q in the output", part), func() bool { return strings.Contains(o.String(), part) })
	return o.String()
}

// wantRunOut fails unless run, on options that pass Validate, returned no
// error and printed want.
func wantRunOut[O options](t testing.TB, run runFunc[O], d deps, o O, want string) {
	t.Helper()
	if got := wantRun(t, run, d, o); got != want {
		t.Errorf("run(%+v):\ngot  %q\nwant %q", o, got, want)
	}
}

// decodeJSON decodes text, which must be one JSON value with no unknown
// key, into v.
func decodeJSON(t testing.TB, text string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %q: %v", text, err)
	}
}

// runChunk runs job jobID's next chunk on lab l.
func runChunk(t testing.TB, l *clitest.Lab, jobID string) {
	t.Helper()
	if _, err := driver.RunChunk(ctx, l.Conn, jobID, nil); err != nil {
		t.Fatalf("run a chunk of %s: %v", jobID, err)
	}
}
