// Package dbutil holds the one way chunks rolls a transaction back:
// [RollbackWithoutCancel], for a [pgx.Tx] and for the transaction that
// package chunktx opens on a bare pgconn ([Raw]).
package dbutil

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// rollbackTimeout bounds a rollback, which runs without the caller's
// cancellation: a server that does not answer costs at most this long (pgx
// then closes the connection, and the server rolls back on its own).
const rollbackTimeout = 5 * time.Second

// Tx is a transaction that [RollbackWithoutCancel] ends: a [pgx.Tx] (or a
// savepoint of one), or [Raw].
type Tx interface {
	Rollback(ctx context.Context) error
}

// Raw is the transaction open on a bare connection (BEGIN sent as SQL, as
// package chunktx does). Rolling it back when none is open, or when the
// connection is closed, is [pgx.ErrTxClosed], as for a pgx.Tx.
type Raw struct{ Conn *pgconn.PgConn }

// Rollback sends ROLLBACK when a transaction is open on the connection.
func (r Raw) Rollback(ctx context.Context) error {
	if r.Conn.IsClosed() || r.Conn.TxStatus() == 'I' {
		return pgx.ErrTxClosed
	}
	_, err := r.Conn.Exec(ctx, "rollback").ReadAll()
	return err
}

// RollbackWithoutCancel rolls tx back even when ctx is cancelled (with
// [context.WithoutCancel], bounded by a few seconds), and returns cause. A
// transaction that has ended already (committed, or rolled back:
// [pgx.ErrTxClosed]) needs no rollback, nor does one whose connection is
// gone after a failure (the server ends it): cause alone is returned then.
// A rollback that fails otherwise is joined to cause, in one sentence, or
// is the error when cause is nil. Call it on every failure path, or
// deferred as err = RollbackWithoutCancel(ctx, tx, err) after Begin.
func RollbackWithoutCancel(ctx context.Context, tx Tx, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	err := tx.Rollback(ctx)
	switch {
	case err == nil, errors.Is(err, pgx.ErrTxClosed), cause != nil && closed(tx):
		return cause
	case cause == nil:
		return fmt.Errorf("rollback: %w", err)
	}
	return fmt.Errorf("%w (and the rollback failed: %w)", cause, err)
}

// closed says whether tx's connection is gone.
func closed(tx Tx) bool {
	switch t := tx.(type) {
	case Raw:
		return t.Conn.IsClosed()
	case interface{ Conn() *pgx.Conn }:
		return t.Conn() == nil || t.Conn().IsClosed()
	}
	return false
}
