package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// The per-chunk bounds. SET LOCAL ends with the transaction, so the
// caller's own settings are back afterwards.
const (
	setLockTimeout      = "set local lock_timeout = '500ms'"
	setStatementTimeout = "set local statement_timeout = '2000ms'"
)

// RunChunk runs the job's next chunk in one transaction on conn and commits
// it. conn is borrowed: it must be idle (autocommit, no open transaction;
// otherwise [ErrInvalid] at once, with nothing done), and it is left open,
// idle and with every session setting as it was, on success and on failure.
//
// It costs two round trips. The first sends BEGIN, SET LOCAL lock_timeout =
// '500ms', SET LOCAL statement_timeout = '2000ms' and SELECT run_chunk($1)
// together; the server locks the job row, checks the stored job, cancels the
// range, writes its audit rows and moves next_index in that one call. Then
// the hooks after-orders, after-audit and after-checkpoint are called, in
// that order (nothing is visible outside the transaction before COMMIT, so
// what they can observe is what they would observe between the steps). The
// second round trip is COMMIT, then the after-commit hook.
//
// A nil fault calls no hooks; a finished job calls none either and returns
// {Processed: [], Done: true}. An error or panic in a hook before COMMIT, or
// a cancelled ctx, rolls back this chunk only (earlier chunks stay
// committed); the hook's error is returned unchanged, and a panic is
// re-raised after the rollback. An after-commit error returns the committed
// result together with the hook's error. Server errors pass through
// unchanged except 22023 ([ErrInvalid]) and CH409 ([ErrConflict]); a lock
// wait over 500 ms is SQLSTATE 55P03 and a statement over 2 s is 57014.
//
// If ctx is cancelled while a round trip is in flight, pgx closes the
// connection (the server then rolls the transaction back); that is the only
// failure that does not leave conn open.
func RunChunk(ctx context.Context, conn *pgx.Conn, jobID string, fault Fault) (res ChunkResult, err error) {
	if err := checkName("job_id", jobID); err != nil {
		return ChunkResult{}, err
	}
	if conn == nil {
		return ChunkResult{}, invalidf("conn: is nil")
	}
	if status := conn.PgConn().TxStatus(); status != 'I' {
		return ChunkResult{}, invalidf("conn: is inside a transaction (status %q); RunChunk commits, so it needs an idle connection", status)
	}
	if err := ctx.Err(); err != nil {
		return ChunkResult{}, err
	}

	pg := conn.PgConn()
	var batch pgconn.Batch
	batch.ExecParams("begin", nil, nil, nil, nil)
	batch.ExecParams(setLockTimeout, nil, nil, nil, nil)
	batch.ExecParams(setStatementTimeout, nil, nil, nil, nil)
	batch.ExecParams("select run_chunk($1)::text", [][]byte{[]byte(jobID)}, []uint32{pgtype.TextOID}, nil, nil)
	results, err := pg.ExecBatch(ctx, &batch).ReadAll()
	if err != nil {
		return ChunkResult{}, rollback(ctx, pg, MapError(err))
	}
	if len(results) != 4 || len(results[3].Rows) != 1 {
		return ChunkResult{}, rollback(ctx, pg, fmt.Errorf("run_chunk: unexpected reply (%d results)", len(results)))
	}
	if err := json.Unmarshal(results[3].Rows[0][0], &res); err != nil {
		return ChunkResult{}, rollback(ctx, pg, fmt.Errorf("run_chunk: %w", err))
	}
	res.Processed = nonNil(res.Processed)

	if fault != nil && len(res.Processed) > 0 {
		if err := preCommitHooks(ctx, pg, fault); err != nil {
			return ChunkResult{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return ChunkResult{}, rollback(ctx, pg, err)
	}
	if err := commit(ctx, pg); err != nil {
		return ChunkResult{}, err
	}
	if fault != nil && len(res.Processed) > 0 {
		if err := fault(AfterCommit); err != nil {
			return res, err
		}
	}
	return res, nil
}

// preCommitHooks calls the three pre-commit hooks and rolls back when one
// fails or panics (re-raising the panic after the rollback).
func preCommitHooks(ctx context.Context, pg *pgconn.PgConn, fault Fault) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if rerr := rollback(ctx, pg, nil); rerr != nil {
				panic(fmt.Sprintf("%v (and the rollback after it failed: %v)", p, rerr))
			}
			panic(p)
		}
	}()
	for _, point := range Points[:3] {
		if err := fault(point); err != nil {
			return rollback(ctx, pg, err)
		}
	}
	return nil
}

// commit ends the transaction. A transaction that had failed answers COMMIT
// with ROLLBACK; that is reported as an error, never as success.
func commit(ctx context.Context, pg *pgconn.PgConn) error {
	results, err := pg.Exec(ctx, "commit").ReadAll()
	if err != nil {
		return err
	}
	if len(results) != 1 || results[0].CommandTag.String() != "COMMIT" {
		return errors.New("commit: the server rolled the transaction back")
	}
	return nil
}

// rollback ends the transaction even when ctx is cancelled, and keeps cause.
// A connection that is gone (a lost server, a terminated backend) needs no
// rollback, since the server rolls back a transaction whose connection
// dropped: then cause is the one error, not cause and "rollback: conn
// closed" glued together.
func rollback(ctx context.Context, pg *pgconn.PgConn, cause error) error {
	if cause != nil && pg.IsClosed() {
		return cause
	}
	if _, err := pg.Exec(context.WithoutCancel(ctx), "rollback").ReadAll(); err != nil {
		return rollbackFailed(cause, err, pg.IsClosed())
	}
	return cause
}

// rollbackFailed is the error of a failed rollback after cause: cause alone
// when the connection is gone (the server rolls back), else both, in one
// sentence.
func rollbackFailed(cause, err error, closed bool) error {
	switch {
	case cause == nil:
		return fmt.Errorf("rollback: %w", err)
	case closed:
		return cause
	}
	return fmt.Errorf("%w (and the rollback failed: %w)", cause, err)
}
