package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// MapError gives the server's 22023 and CH409 their kinds, keeps the
// server's error reachable with errors.As, and passes every other error
// through as the very same value.
func TestMapErrorKinds(t *testing.T) {
	cases := []struct {
		name     string
		pg       *pgconn.PgError
		kind     error
		wantText string
	}{
		{"22023", &pgconn.PgError{Severity: "ERROR", Code: "22023", Message: "targets[0].qty: must be between 1 and 1000, got 0"},
			ErrInvalid, "invalid: targets[0].qty: must be between 1 and 1000, got 0"},
		{"22023 with detail", &pgconn.PgError{Code: "22023", Message: "job_id: must be 1 to 64 ASCII letters, digits, _ or -, got 0 characters",
			Detail: "the plan came from approval 17", Hint: "a hint is not part of the text"},
			ErrInvalid, "invalid: job_id: must be 1 to 64 ASCII letters, digits, _ or -, got 0 characters (the plan came from approval 17)"},
		{"CH409", &pgconn.PgError{Code: "CH409", Message: "order 7: does not match its approval"},
			ErrConflict, "conflict: order 7: does not match its approval"},
		{"CH409 with detail", &pgconn.PgError{Code: "CH409", Message: "job j: already registered with different targets", Detail: "stored 3 targets"},
			ErrConflict, "conflict: job j: already registered with different targets (stored 3 targets)"},
		{"22023 with an empty message", &pgconn.PgError{Code: "22023"}, ErrInvalid, "invalid: "},
	}
	for _, c := range cases {
		for _, wrapped := range []bool{false, true} {
			name := c.name
			var in error = c.pg
			if wrapped {
				name += ", wrapped"
				in = fmt.Errorf("select register: %w", c.pg)
			}
			t.Run(name, func(t *testing.T) {
				err := MapError(in)
				if !errors.Is(err, c.kind) {
					t.Fatalf("%v does not match %v", err, c.kind)
				}
				other := ErrConflict
				if c.kind == ErrConflict {
					other = ErrInvalid
				}
				if errors.Is(err, other) {
					t.Fatalf("%v also matches %v", err, other)
				}
				if got := err.Error(); got != c.wantText {
					t.Fatalf("text\n got %q\nwant %q", got, c.wantText)
				}
				var pgErr *pgconn.PgError
				if !errors.As(err, &pgErr) || pgErr != c.pg {
					t.Fatalf("errors.As finds %p, want the server's error %p", pgErr, c.pg)
				}
				if pgErr.Detail != c.pg.Detail || pgErr.Hint != c.pg.Hint || pgErr.Code != c.pg.Code {
					t.Fatalf("the server's error changed: %#v", pgErr)
				}
				var e *Error
				if !errors.As(err, &e) || e.Kind != c.kind || e.Msg != c.pg.Message || e.Err != in {
					t.Fatalf("the *Error is %#v, want kind %v, message %q and the original error", e, c.kind, c.pg.Message)
				}
			})
		}
	}
}

func TestMapErrorPassesThrough(t *testing.T) {
	lockTimeout := &pgconn.PgError{Code: "55P03", Message: "canceling statement due to lock timeout"}
	statementTimeout := &pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}
	hookErr := errors.New("hook after-audit failed")
	cases := []struct {
		name string
		err  error
	}{
		{"55P03 lock timeout", lockTimeout},
		{"57014 statement timeout", statementTimeout},
		{"57014 wrapped", fmt.Errorf("run_chunk: %w", statementTimeout)},
		{"23505 unique violation", &pgconn.PgError{Code: "23505", Message: "duplicate key value violates unique constraint"}},
		{"22P02, another class 22 code", &pgconn.PgError{Code: "22P02", Message: "invalid input syntax for type json"}},
		{"a code that only starts like CH409", &pgconn.PgError{Code: "CH40A", Message: "not ours"}},
		{"a plain error", hookErr},
		{"io.ErrUnexpectedEOF (connection lost)", io.ErrUnexpectedEOF},
		{"context.Canceled", context.Canceled},
		{"an error whose text says invalid", errors.New("invalid: looks like ours but is not")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := MapError(c.err)
			if got != c.err {
				t.Fatalf("MapError(%v) = %v (%T), want the same value", c.err, got, got)
			}
			if errors.Is(got, ErrInvalid) || errors.Is(got, ErrConflict) {
				t.Fatalf("%v matches ErrInvalid or ErrConflict", got)
			}
		})
	}
	if got := MapError(nil); got != nil {
		t.Fatalf("MapError(nil) = %v", got)
	}
}

// A Go-side refusal (Invalidf) is an ErrInvalid with no server error behind it.
func TestInvalidf(t *testing.T) {
	err := Invalidf("%s: must be between %d and %d, got %d", "chunk_size", 1, 10, 11)
	if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrConflict) {
		t.Fatalf("%v: wrong kind", err)
	}
	if got, want := err.Error(), "invalid: chunk_size: must be between 1 and 10, got 11"; got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		t.Fatalf("a Go-side refusal unwraps to a server error: %v", pgErr)
	}
}

// NewError builds either kind; its cause is found by errors.As but is not
// part of the message.
func TestNewError(t *testing.T) {
	cause := &pgconn.PgError{Code: "42601", Message: "cannot insert multiple commands into a prepared statement"}
	err := NewError(ErrInvalid, cause, "%s: must be one statement, got several", "query")
	var pgErr *pgconn.PgError
	if !errors.Is(err, ErrInvalid) || !errors.As(err, &pgErr) || pgErr != cause {
		t.Fatalf("%v: want an ErrInvalid that unwraps to its cause", err)
	}
	if got, want := err.Error(), "invalid: query: must be one statement, got several"; got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
	conflict := NewError(ErrConflict, nil, "schema %s: already exists", "lab")
	if !errors.Is(conflict, ErrConflict) || errors.Is(conflict, ErrInvalid) || conflict.Error() != "conflict: schema lab: already exists" {
		t.Fatalf("conflict: %v", conflict)
	}
}
