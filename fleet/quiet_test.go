package fleet

import (
	"errors"
	"testing"
	"time"
)

// quiet logs an error once, counts its repeats, logs it again with the
// count once its interval has passed, and starts afresh after a success or
// another error.
func TestQuiet(t *testing.T) {
	q := quiet{every: 50 * time.Millisecond}
	down, full := errors.New("connection refused"), errors.New("too many clients")
	want := func(err error, wantRepeats int, wantLog bool) {
		t.Helper()
		if repeats, log := q.first(err); repeats != wantRepeats || log != wantLog {
			t.Fatalf("first(%v) = %d, %v; want %d, %v", err, repeats, log, wantRepeats, wantLog)
		}
	}
	want(down, 0, true)
	want(down, 0, false)
	want(down, 0, false)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if repeats, log := q.first(down); log {
			if repeats < 2 {
				t.Fatalf("logged again with %d repeats, want at least the 2 suppressed ones", repeats)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the same error was never logged again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	want(down, 0, false)
	want(full, 0, true) // another error: at once
	q.ok()
	want(full, 0, true) // after a success: at once
}
