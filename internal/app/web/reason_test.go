package web

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
)

// Every database error is told as one of a few reasons, by its SQLSTATE's
// class; the error's text never reaches the answer.
func TestReason(t *testing.T) {
	secret := "user=alice database=payroll host=db.internal port=6543"
	pg := func(code string) error {
		return fmt.Errorf("failed to connect to `%s`: %w", secret, &pgconn.PgError{Code: code, Message: secret})
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{pg("3D000"), reasonUnavailable}, // no such database
		{pg("28P01"), reasonUnavailable}, // password authentication failed
		{pg("08006"), reasonUnavailable},
		{pg("53300"), reasonUnavailable}, // too many connections
		{pg("57P01"), reasonUnavailable}, // admin shutdown
		{pg("57014"), reasonUnavailable}, // statement timeout
		{pg("42883"), reasonNoAccess},    // status_page does not exist
		{pg("42501"), reasonNoAccess},    // permission denied
		{pg("42P01"), reasonNoAccess},
		{pg("3F000"), reasonNoAccess},
		{pg("22021"), reasonFailed},
		{pg("XX000"), reasonFailed},
		{fmt.Errorf("the database does not answer: %w", ErrNotInstalled), reasonNoAccess},
		{fmt.Errorf("ready: %w", &driver.AccessError{Role: "alice", Schema: "payroll", Owner: "bob", Need: driver.Viewer}), reasonNoGrant},
		{fmt.Errorf("%s: %w", secret, context.DeadlineExceeded), reasonUnavailable},
		{errors.New(secret + ": dial tcp: connection refused"), reasonUnavailable},
	} {
		if got := reason(c.err); got != c.want+" (details in the chunks log)" {
			t.Errorf("reason(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// ?after= must be empty or a job id; the refusal names the parameter and
// shows the value escaped and cut short.
func TestCheckAfter(t *testing.T) {
	for after, want := range map[string]string{
		"":          "",
		"a":         "",
		"job-001_X": "",
		"\x00":      `after: must be a job id (1 to 64 ASCII letters, digits, _ or -), got "\x00"`,
		"a\xffb":    `after: must be a job id (1 to 64 ASCII letters, digits, _ or -), got "a\xffb"`,
		"a b":       `after: must be a job id (1 to 64 ASCII letters, digits, _ or -), got "a b"`,
		"\u202ea":   `after: must be a job id (1 to 64 ASCII letters, digits, _ or -), got "\u202ea"`,
	} {
		got := ""
		if err := checkAfter(after); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("checkAfter(%q) = %q, want %q", after, got, want)
		}
	}
	long := strings.Repeat("a", 1000) + "\x00"
	want := `after: must be a job id (1 to 64 ASCII letters, digits, _ or -), got "` + long[:64] + `"… (1001 characters)`
	if err := checkAfter(long); err == nil || err.Error() != want {
		t.Errorf("checkAfter(1000 letters and a NUL) = %v, want %s", err, want)
	}
}
