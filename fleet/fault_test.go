package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// sentNothing is an error that says, as pgx's do, that it happened before
// anything was sent to the server.
type sentNothing struct{ error }

func (sentNothing) SafeToRetry() bool { return true }

// Classify asks pgconn.SafeToRetry and pgconn.Timeout before anything
// else: such an error is transient even when it wraps a server error that
// would be permanent on its own.
func TestClassifyAsksPgxFirst(t *testing.T) {
	permanent := &pgconn.PgError{Code: "42501", Message: "permission denied"}
	if transient, _ := Classify(permanent); transient {
		t.Fatal("42501 alone: want permanent")
	}
	if transient, reason := Classify(sentNothing{permanent}); !transient ||
		reason != "nothing reached the server (the connection was closed or busy, or the context had ended): safe to retry" {
		t.Errorf("SafeToRetry around 42501: %v, %q; want transient, nothing reached the server", transient, reason)
	}

	// A real timeout of pgconn: a connection attempt whose deadline has passed.
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, timeout := pgconn.Connect(ctx, "host=127.0.0.1 port=1 sslmode=disable")
	if !pgconn.Timeout(timeout) || pgconn.SafeToRetry(timeout) {
		t.Fatalf("connect after the deadline: %v (Timeout %v, SafeToRetry %v); want a timeout that is not SafeToRetry",
			timeout, pgconn.Timeout(timeout), pgconn.SafeToRetry(timeout))
	}
	if transient, reason := Classify(errors.Join(timeout, permanent)); !transient || reason != "timeout: the server did not answer in time" {
		t.Errorf("a timeout joined to 42501: %v, %q; want transient, timeout", transient, reason)
	}
}

// A server error is transient only when waiting can fix it: a lost
// connection, the server shutting down or out of slots, a read-only
// server, and every error that a chunk is retried for (TransientChunkError);
// any other SQLSTATE, a trigger's exception say, is permanent.
func TestClassifyServerCodes(t *testing.T) {
	for code, want := range map[string]bool{
		"08006": true, "08P01": true, "53300": true, "53100": true, "57P01": true, "57P02": true, "57P03": true,
		"57P05": true, "25006": true, "40001": true, "40P01": true, "55P03": true, "57014": true,
		"P0001": false, "P0004": false, "23505": false, "22003": false, "23502": false, "42702": false, "42501": false,
		"28P01": false, "3D000": false, "57P04": false, "XX000": false, "CH409": false, "22023": false,
	} {
		transient, reason := Classify(&pgconn.PgError{Code: code, Message: "m"})
		if transient != want || !strings.Contains(reason, code) {
			t.Errorf("Classify(SQLSTATE %s) = %v, %q; want %v and a reason that names it", code, transient, reason, want)
		}
	}
	if _, reason := Classify(&pgconn.PgError{Code: "P0001"}); reason != "server error (SQLSTATE P0001): it does not go away by itself" {
		t.Errorf("P0001: reason %q", reason)
	}
	for code, want := range map[string]bool{
		"40001": true, "40P01": true, "55P03": true, "57014": true, "57P01": true, "57P02": true, "57P03": true,
		"08000": true, "08006": true,
		"53300": false, "25006": false, "57P05": false, "40002": false, "P0001": false, "CH409": false, "22023": false,
	} {
		if got := TransientChunkError(code); got != want {
			t.Errorf("TransientChunkError(%s) = %v, want %v", code, got, want)
		}
	}
}
