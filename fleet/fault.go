package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
)

// errReadOnly is what the start-up check of [Worker.Start] makes of a server
// that answers but cannot take writes: a standby still in recovery, or a
// primary with default_transaction_read_only on.
type errReadOnly struct{ standby bool }

func (e errReadOnly) Error() string {
	if e.standby {
		return "the server is a standby (pg_is_in_recovery() is true): it takes no writes until it is promoted"
	}
	return "the server is read-only (transaction_read_only is on)"
}

// Classify says what a worker makes of an error of the database: transient
// errors are waited out, permanent ones need a person. reason is a short
// phrase for the log: what the error means and, for a permanent one, what
// to do. It judges an error of a pass as a whole or of the start-up check;
// what becomes of a chunk's own error is decided in the pass, on the server
// ([TransientChunkError]).
//
// pgx's own judgement is asked first: an error that [pgconn.SafeToRetry]
// says happened before anything was sent, and a timeout
// ([pgconn.Timeout]), are transient whatever they wrap.
//
// Transient: connection refused and other network errors, a lost
// connection (class 08, or an end of file), no free connection slot (53300,
// and the rest of class 53), a server that is starting up, shutting down or
// in crash recovery (57P03), a session ended by the server (57P01
// pg_terminate_backend or a fast shutdown, 57P02 a crash of another
// backend, 57P05 idle_session_timeout), a server that takes no writes
// (25006, a standby not yet promoted, target_session_attrs=read-write
// finding no writable host), every [TransientChunkError] (lock and
// statement timeouts, serialization failures, deadlocks), and timeouts of
// the client.
//
// Permanent: every other error the server sent, in particular
// authentication (SQLSTATE class 28: no such role, a wrong password,
// pg_hba.conf), an unknown database (3D000), and the SQL itself refused
// (class 42: chunks not installed in the schema, or an older version of it,
// or missing privileges, and a [*driver.AccessError]: a role with no chunks
// grant); and an invalid connection string. Waiting never fixes these.
func Classify(err error) (transient bool, reason string) {
	var pgErr *pgconn.PgError
	var parseErr *pgconn.ParseConfigError
	var readOnly errReadOnly
	var netErr net.Error
	var access *driver.AccessError
	switch {
	case err == nil:
		return false, "no error"
	case pgconn.SafeToRetry(err):
		return true, "nothing reached the server (the connection was closed or busy, or the context had ended): safe to retry"
	case pgconn.Timeout(err):
		return true, "timeout: the server did not answer in time"
	case errors.As(err, &access):
		return false, "a missing chunks grant"
	case errors.Is(err, ErrNotInstalled):
		return false, "chunks is not installed in this schema: run chunks migrate"
	case errors.As(err, new(*SchemaError)):
		return false, "the chunks schema is older than this binary: run chunks migrate"
	case errors.As(err, &parseErr), errors.Is(err, driver.ErrInvalid):
		return false, "invalid connection string or settings"
	case errors.As(err, &readOnly):
		return true, "not writable yet: " + readOnly.Error()
	case errors.Is(err, pgconn.ErrReadOnlyConnection):
		return true, "no writable server among the hosts (target_session_attrs=read-write): a standby not yet promoted?"
	case errors.As(err, &pgErr):
		return classifyCode(pgErr.Code)
	case errors.Is(err, syscall.ECONNREFUSED):
		return true, "connection refused: the server is down or not listening yet"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return true, "timeout: the server did not answer in time"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed):
		return true, "connection lost"
	}
	return true, "could not talk to the database"
}

// classifyCode is [Classify] for an error the server sent.
func classifyCode(code string) (bool, string) {
	switch {
	case pgerrcode.IsInvalidAuthorizationSpecification(code):
		return false, fmt.Sprintf("authentication failed (SQLSTATE %s): check the user, password and pg_hba.conf", code)
	case code == pgerrcode.InvalidCatalogName:
		return false, "the database does not exist (SQLSTATE 3D000): check the DSN"
	case code == pgerrcode.UndefinedFunction, code == pgerrcode.UndefinedTable:
		return false, fmt.Sprintf("a chunks function or table is missing (SQLSTATE %s): run chunks migrate for this schema", code)
	case code == pgerrcode.InsufficientPrivilege:
		return false, "permission denied (SQLSTATE 42501): grant the worker's role the privileges on the chunks schema"
	case pgerrcode.IsSyntaxErrororAccessRuleViolation(code):
		return false, fmt.Sprintf("the server refused the SQL (SQLSTATE %s): is the schema's chunks as new as this binary? run chunks migrate", code)
	case code == pgerrcode.TooManyConnections:
		return true, "no free connection slot (SQLSTATE 53300, too many connections)"
	case pgerrcode.IsInsufficientResources(code):
		return true, fmt.Sprintf("the server is short of a resource (SQLSTATE %s)", code)
	case code == pgerrcode.CannotConnectNow:
		return true, "the server is starting up, shutting down or recovering (SQLSTATE 57P03)"
	case code == pgerrcode.AdminShutdown, code == pgerrcode.CrashShutdown:
		return true, fmt.Sprintf("the server ended the session (SQLSTATE %s): a restart, a crash or pg_terminate_backend", code)
	case code == pgerrcode.IdleSessionTimeout:
		return true, "the server ended an idle session (SQLSTATE 57P05, idle_session_timeout)"
	case pgerrcode.IsConnectionException(code):
		return true, fmt.Sprintf("connection error (SQLSTATE %s)", code)
	case code == pgerrcode.ReadOnlySQLTransaction:
		return true, "the server takes no writes (SQLSTATE 25006): a standby not yet promoted, or a read-only primary"
	case TransientChunkError(code):
		return true, fmt.Sprintf("a lock or statement timeout, a serialization failure or a deadlock (SQLSTATE %s)", code)
	}
	return false, fmt.Sprintf("server error (SQLSTATE %s): it does not go away by itself", code)
}

// TransientChunkError reports whether a chunk that failed with SQLSTATE
// code is tried again: its job rests the worker's RetryDelay, then any
// worker runs the chunk again. Only these are: 40001 serialization failure,
// 40P01 deadlock, 55P03 lock not available (a lock wait over the chunk's
// 500 ms), 57014 query canceled (the chunk's statement timeout, or a cancel
// request), 57P01, 57P02 and 57P03 (the server shutting down or
// restarting) and class 08 (a lost connection, e.g. of a trigger's dblink).
// A chunk that fails with any other error pauses its job with the reason,
// as a conflict does: a trigger's exception (P0001), a constraint, a
// privilege or a value out of range comes back at every try.
//
// run_next_chunk makes this decision on the server, in the pass's own
// transaction; this is the same list, for Go.
func TransientChunkError(code string) bool {
	switch code {
	case pgerrcode.SerializationFailure, pgerrcode.DeadlockDetected, pgerrcode.LockNotAvailable, pgerrcode.QueryCanceled,
		pgerrcode.AdminShutdown, pgerrcode.CrashShutdown, pgerrcode.CannotConnectNow:
		return true
	}
	return pgerrcode.IsConnectionException(code)
}

// The start-up back-off of [Worker.Start]: the first retry after
// firstRetryDelay, each next one after twice as long, up to maxRetryDelay.
const (
	firstRetryDelay = 100 * time.Millisecond
	maxRetryDelay   = 5 * time.Second
)

// waitReady checks, until it passes, that the database is ready for
// passes: reachable, writable, and with the chunks queue on the search_path.
// It returns the queue's NOTIFY channel. A transient error is logged with
// its reason and the check is tried again with capped exponential back-off;
// a permanent one is returned at once. When stop ends first, it returns ""
// and no error.
func (r *runner) waitReady(stop context.Context) (string, error) {
	delay := firstRetryDelay
	for attempt := 1; ; attempt++ {
		channel, err := r.check(stop)
		if err == nil {
			if attempt > 1 {
				r.log.Info("database ready", "attempts", attempt)
			}
			return channel, nil
		}
		if stop.Err() != nil {
			return "", nil
		}
		transient, reason := Classify(err)
		if !transient {
			if errors.Is(err, ErrNotInstalled) || errors.As(err, new(*SchemaError)) {
				return "", err
			}
			return "", fmt.Errorf("worker %s cannot start: %s: %w", r.id, reason, err)
		}
		r.log.Warn("waiting for the database", "attempt", attempt, "reason", reason, "error", err,
			"retry_in_ms", delay.Milliseconds())
		timer := time.NewTimer(delay)
		select {
		case <-stop.Done():
		case <-timer.C:
		}
		timer.Stop()
		if stop.Err() != nil {
			return "", nil
		}
		delay = min(2*delay, maxRetryDelay)
	}
}

// check is one start-up check of [runner.waitReady].
func (r *runner) check(ctx context.Context) (string, error) {
	var channel string
	var standby, readOnly bool
	err := r.pool.QueryRow(ctx, `select queue_channel(), pg_is_in_recovery(),
		current_setting('transaction_read_only')::bool`).Scan(&channel, &standby, &readOnly)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == pgerrcode.UndefinedFunction:
		var access *driver.AccessError
		if errors.As(driver.ExplainMissing(ctx, r.pool, err, driver.Operator), &access) {
			return "", access // the functions are there, the role may not use them
		}
		return "", fmt.Errorf("%w (%s)", ErrNotInstalled, pgErr.Message)
	case err != nil:
		return "", err
	case standby || readOnly:
		return "", errReadOnly{standby: standby}
	}
	v, err := LoadSchemaVersions(ctx, r.pool)
	switch {
	case err != nil:
		return "", err
	case v.Compare == "older":
		// The functions it would call are older than this binary's
		// passes expect: refuse, until chunks migrate has run.
		r.log.Error("refusing to start: "+v.String(), "database_version", v.Database, "binary_version", v.Binary)
		return "", fmt.Errorf("worker %s cannot start: %w", r.id, &SchemaError{Versions: v})
	case v.Compare == "newer":
		// A rolling upgrade: migrate first, then the workers, one by one.
		r.log.Warn("running on a newer schema: "+v.String(), "database_version", v.Database, "binary_version", v.Binary)
	}
	return channel, nil
}

// SchemaError says that the database's chunks schema is older than the
// binary's: [Worker.Start] returns it (its functions are not the ones this
// worker's passes expect, so it runs nothing until chunks migrate), and so
// does the status page's readiness check.
type SchemaError struct {
	Versions SchemaVersions // the database's and the binary's
}

// Error names both versions and chunks migrate.
func (e *SchemaError) Error() string { return e.Versions.String() }
