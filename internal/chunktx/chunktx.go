// Package chunktx sends one chunk's transaction to the server: BEGIN, the
// per-chunk bounds (SET LOCAL lock_timeout = '500ms' and statement_timeout
// = '2000ms'), one SELECT of one value, and COMMIT, pipelined on a pgconn
// so that the whole transaction is one round trip. driver.RunChunk (without
// hooks) and the fleet's worker pass use it. SET LOCAL ends with the
// transaction, so the connection's own settings are back afterwards.
package chunktx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"

	"github.com/chunks-dev/chunks/internal/dbutil"
)

// The per-chunk bounds.
const (
	setLockTimeout      = "set local lock_timeout = '500ms'"
	setStatementTimeout = "set local statement_timeout = '2000ms'"
)

// Arg is one bind parameter: its text form and its type's OID, or NULL.
type Arg struct {
	Text string
	OID  uint32
	Null bool // the parameter is NULL (Text is not sent)
}

// Call runs query, which must return one row of one column, in a
// transaction of its own on pg, and commits it, in one round trip. It
// returns the value's text (nil for NULL). On any failure the transaction is
// rolled back (one more round trip) and pg is left idle, unless the
// connection itself was lost.
func Call(ctx context.Context, pg *pgconn.PgConn, query string, args ...Arg) ([]byte, error) {
	batch := open(query, args)
	batch.ExecParams("commit", nil, nil, nil, nil)
	results, err := pg.ExecBatch(ctx, batch).ReadAll()
	if err != nil {
		return nil, dbutil.RollbackWithoutCancel(ctx, dbutil.Raw{Conn: pg}, err)
	}
	if len(results) != 5 || results[4].CommandTag.String() != "COMMIT" {
		return nil, dbutil.RollbackWithoutCancel(ctx, dbutil.Raw{Conn: pg}, fmt.Errorf("%s: unexpected reply (%d results); the transaction was not committed", query, len(results)))
	}
	return value(query, results[3])
}

// Open is [Call] without the COMMIT: the transaction stays open on pg for
// the caller to end with [Commit] or [dbutil.RollbackWithoutCancel] of [dbutil.Raw]. On failure it is rolled
// back already.
func Open(ctx context.Context, pg *pgconn.PgConn, query string, args ...Arg) ([]byte, error) {
	results, err := pg.ExecBatch(ctx, open(query, args)).ReadAll()
	if err != nil {
		return nil, dbutil.RollbackWithoutCancel(ctx, dbutil.Raw{Conn: pg}, err)
	}
	if len(results) != 4 {
		return nil, dbutil.RollbackWithoutCancel(ctx, dbutil.Raw{Conn: pg}, fmt.Errorf("%s: unexpected reply (%d results)", query, len(results)))
	}
	v, err := value(query, results[3])
	if err != nil {
		return nil, dbutil.RollbackWithoutCancel(ctx, dbutil.Raw{Conn: pg}, err)
	}
	return v, nil
}

func open(query string, args []Arg) *pgconn.Batch {
	var batch pgconn.Batch
	batch.ExecParams("begin", nil, nil, nil, nil)
	batch.ExecParams(setLockTimeout, nil, nil, nil, nil)
	batch.ExecParams(setStatementTimeout, nil, nil, nil, nil)
	values := make([][]byte, len(args))
	oids := make([]uint32, len(args))
	for i, a := range args {
		oids[i] = a.OID
		if !a.Null {
			values[i] = []byte(a.Text)
		}
	}
	batch.ExecParams(query, values, oids, nil, nil)
	return &batch
}

func value(query string, r *pgconn.Result) ([]byte, error) {
	if len(r.Rows) != 1 || len(r.Rows[0]) != 1 {
		return nil, fmt.Errorf("%s: want one value, got %d rows", query, len(r.Rows))
	}
	return r.Rows[0][0], nil
}

// Commit ends the transaction. A transaction that had failed answers COMMIT
// with ROLLBACK; that is reported as an error, never as success.
func Commit(ctx context.Context, pg *pgconn.PgConn) error {
	results, err := pg.Exec(ctx, "commit").ReadAll()
	if err != nil {
		return err
	}
	if len(results) != 1 || results[0].CommandTag.String() != "COMMIT" {
		return errors.New("commit: the server rolled the transaction back")
	}
	return nil
}

// CancelOnContext makes a cancelled context cancel the statement on the
// server (a cancel request), so that a chunk in flight rolls back. pgx's
// default only closes the connection, and since COMMIT travels with the
// chunk, the server would then go on and commit it. If the server has not
// answered a second after the cancel request, the connection is closed.
func CancelOnContext(cfg *pgconn.Config) {
	cfg.BuildContextWatcherHandler = func(pg *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pg, DeadlineDelay: time.Second}
	}
}
