package driver

import (
	"errors"
	"fmt"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrInvalid is matched (with [errors.Is]) by every error about bad input:
// the Go validation, and SQLSTATE 22023 from the server. The error's text
// names the field.
var ErrInvalid = errors.New("invalid")

// ErrConflict is matched (with [errors.Is]) by every business conflict:
// SQLSTATE CH409 from the server (an order that does not match its approval,
// an unknown or unsound job, a different job under a registered id). The
// error's text names the job or order id.
var ErrConflict = errors.New("conflict")

// ConflictCode is the SQLSTATE the chunks functions raise for a conflict.
const ConflictCode = "CH409"

// Error is an [ErrInvalid] or [ErrConflict] with the message a person reads.
// When it came from the server, Err is the *[pgconn.PgError] (so errors.As
// still finds it, with its Detail and Hint).
type Error struct {
	Kind error  // ErrInvalid or ErrConflict
	Msg  string // names the field, or the job or order id
	Err  error  // the server's error, or nil for a Go-side refusal
}

// Error is the kind, the message and, when the server gave one, its detail:
// "conflict: order 9: state is paid".
func (e *Error) Error() string {
	s := e.Kind.Error() + ": " + e.Msg
	var pgErr *pgconn.PgError
	if errors.As(e.Err, &pgErr) && pgErr.Detail != "" {
		s += " (" + pgErr.Detail + ")"
	}
	return s
}

// Unwrap returns the kind and, when there is one, the server's error.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// NewError is the one way to build an [Error]: kind is [ErrInvalid] or
// [ErrConflict], the message is format's (it names the field, or the job or
// order id), and cause, when not nil, is the underlying error: [errors.As]
// still finds it, and its text is not part of the message.
func NewError(kind, cause error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// Invalidf is a Go-side refusal of bad input, an [ErrInvalid] whose format
// starts with the field's name: NewError(ErrInvalid, nil, format, args...).
func Invalidf(format string, args ...any) error {
	return NewError(ErrInvalid, nil, format, args...)
}

// MapError gives the server's SQLSTATE 22023 and CH409 their kinds
// ([ErrInvalid], [ErrConflict]) and passes every other error through
// unchanged: for callers of the chunks SQL functions outside this package.
func MapError(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch pgErr.Code {
	case pgerrcode.InvalidParameterValue:
		return NewError(ErrInvalid, err, "%s", pgErr.Message)
	case ConflictCode:
		return NewError(ErrConflict, err, "%s", pgErr.Message)
	}
	return err
}
