package fleet

import (
	"context"
	"errors"
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
