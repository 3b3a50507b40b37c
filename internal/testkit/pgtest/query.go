package pgtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TryString runs sql on conn and returns its one value as text ("<null>"
// for SQL NULL), or the error.
func TryString(conn *pgx.Conn, sql string, args ...any) (string, error) {
	var v *string
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		return "", err
	}
	if v == nil {
		return "<null>", nil
	}
	return *v, nil
}

// MustString is [TryString] that fails the test on error.
func MustString(t testing.TB, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	v, err := TryString(conn, sql, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", sql, args, err)
	}
	return v
}

// MustInt runs sql on conn and returns its one value, an integer; it fails
// the test on error.
func MustInt(t testing.TB, conn *pgx.Conn, sql string, args ...any) int {
	t.Helper()
	return mustScan[int](t, conn, sql, args...)
}

// MustBool runs sql on conn and returns its one value, a boolean; it fails
// the test on error.
func MustBool(t testing.TB, conn *pgx.Conn, sql string, args ...any) bool {
	t.Helper()
	return mustScan[bool](t, conn, sql, args...)
}

// mustScan is the one value of sql on conn, as a T; the test fails on error.
func mustScan[T any](t testing.TB, conn *pgx.Conn, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s %v: %v", sql, args, err)
	}
	return v
}

// WantPgError fails the test unless err is a server error with exactly
// code (SQLSTATE) and message msg.
func WantPgError(t testing.TB, err error, code, msg string) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("want SQLSTATE %s %q, got %v", code, msg, err)
	}
	if pgErr.Code != code || pgErr.Message != msg {
		t.Fatalf("want SQLSTATE %s %q,\n got SQLSTATE %s %q", code, msg, pgErr.Code, pgErr.Message)
	}
}

// WantPgErrorContaining fails the test unless err is a server error with
// code (SQLSTATE) whose message contains part.
func WantPgErrorContaining(t testing.TB, err error, code, part string) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("want SQLSTATE %s containing %q, got %v", code, part, err)
	}
	if pgErr.Code != code || !strings.Contains(pgErr.Message, part) {
		t.Fatalf("want SQLSTATE %s containing %q,\n got SQLSTATE %s %q", code, part, pgErr.Code, pgErr.Message)
	}
}

// WaitFor polls cond every 10 ms until it holds, for at most within, and
// returns how long that took; it fails the test, naming what, otherwise.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	started := time.Now()
	for !cond() {
		if time.Since(started) > within {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(started)
}
