package driver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/internal/chunktx"
	"github.com/chunks-dev/chunks/internal/dbutil"
)

// RunChunk runs the job's next chunk in one transaction on conn and commits
// it. conn is borrowed: it must be idle (autocommit, no open transaction;
// otherwise [ErrInvalid] at once, with nothing done), and it is left open,
// idle and with every session setting as it was, on success and on failure.
//
// Without a fault it costs one round trip: BEGIN, SET LOCAL lock_timeout =
// '500ms', SET LOCAL statement_timeout = '2000ms', SELECT run_chunk($1) and
// COMMIT are sent together (a failure anywhere in them costs one more, the
// ROLLBACK). The server locks the job row, checks the stored job, cancels
// the range, writes its audit rows and moves next_index in that one call.
//
// With a fault it costs two: the same batch without COMMIT; then the hooks
// after-orders, after-audit and after-checkpoint are called, in that order
// (nothing is visible outside the transaction before COMMIT, so what they
// can observe is what they would observe between the steps); then COMMIT,
// then the after-commit hook. A finished job calls no hook and returns
// {Processed: [], Done: true}. An error or panic in a hook before COMMIT, or
// a cancelled ctx, rolls back this chunk only (earlier chunks stay
// committed); the hook's error is returned unchanged, and a panic is
// re-raised after the rollback. An after-commit error returns the committed
// result together with the hook's error. Server errors pass through
// unchanged except 22023 ([ErrInvalid]) and CH409 ([ErrConflict]); a lock
// wait over 500 ms is SQLSTATE 55P03 and a statement over 2 s is 57014.
//
// If ctx is cancelled while a round trip is in flight, what happens depends
// on conn's context watcher. With pgx's default, pgx closes the connection;
// the server then rolls back an open transaction, but without a fault the
// COMMIT went with the chunk, so the chunk may still commit, exactly as when
// a client dies after sending it. With [pgconn.CancelRequestContextWatcherHandler]
// (what [ChunkFile] and [Drain] use) the server cancels the statement and
// the chunk rolls back, unless it had already finished. A closed connection
// is the only failure that does not leave conn open.
//
// It is [JobRef.RunChunk] of any tenant's job: the contract fixes this
// signature.
func RunChunk(ctx context.Context, conn *pgx.Conn, jobID string, fault Fault) (ChunkResult, error) {
	return JobRef{ID: jobID}.RunChunk(ctx, conn, fault)
}

// RunChunk is [RunChunk] of the job: with a tenant, SQL run_chunk(tenant,
// job_id), which runs the chunk only when the job is that tenant's (a job of
// another tenant is an [ErrConflict] and nothing is written). Through a
// chunks router (package router) it costs the same one round trip: the
// router runs the chunk on the tenant's shard as ONE transaction there,
// committed within the call. A router's transaction cannot hold the
// shard's, so no hook could run before that COMMIT: a fault through a
// router is an [ErrInvalid], and nothing runs (run the drill
// on the shard itself).
func (j JobRef) RunChunk(ctx context.Context, conn *pgx.Conn, fault Fault) (res ChunkResult, err error) {
	if err := j.Validate(); err != nil {
		return ChunkResult{}, err
	}
	if conn == nil {
		return ChunkResult{}, Invalidf("conn: is nil")
	}
	if status := conn.PgConn().TxStatus(); status != 'I' {
		return ChunkResult{}, Invalidf("conn: is inside a transaction (status %q); RunChunk commits, so it needs an idle connection", status)
	}
	if err := ctx.Err(); err != nil {
		return ChunkResult{}, err
	}

	pg := conn.PgConn()
	call, args := j.chunkCall()
	if fault == nil {
		body, err := chunktx.Call(ctx, pg, "select "+call, args...)
		if err != nil {
			return ChunkResult{}, MapError(err)
		}
		res, err := decodeChunk(body)
		if err != nil {
			return ChunkResult{}, fmt.Errorf("run_chunk: committed, but its reply does not read: %w", err)
		}
		return res, nil
	}

	// On a router the chunk would commit on the shard inside the call, so
	// the same query first asks whether this is one: NULL, nothing run.
	body, err := chunktx.Open(ctx, pg, "select case when "+routerFunction+" is null then "+call+" end", args...)
	if err != nil {
		return ChunkResult{}, MapError(err)
	}
	if body == nil {
		return ChunkResult{}, dbutil.RollbackWithoutCancel(ctx, dbutil.Raw{Conn: pg}, Invalidf("fault: a chunks router commits the chunk on its shard inside the call, so no hook can run before its COMMIT: run the drill on the shard itself"))
	}
	if res, err = decodeChunk(body); err != nil {
		return ChunkResult{}, dbutil.RollbackWithoutCancel(ctx, dbutil.Raw{Conn: pg}, fmt.Errorf("run_chunk: %w", err))
	}
	changed := len(res.Processed) > 0 || len(res.Keys) > 0

	if changed {
		if err := preCommitHooks(ctx, pg, fault); err != nil {
			return ChunkResult{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return ChunkResult{}, dbutil.RollbackWithoutCancel(ctx, dbutil.Raw{Conn: pg}, err)
	}
	if err := chunktx.Commit(ctx, pg); err != nil {
		return ChunkResult{}, err
	}
	if changed {
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
			if rerr := dbutil.RollbackWithoutCancel(ctx, dbutil.Raw{Conn: pg}, nil); rerr != nil {
				panic(fmt.Sprintf("%v (and the rollback after it failed: %v)", p, rerr))
			}
			panic(p)
		}
	}()
	for _, point := range Points[:3] {
		if err := fault(point); err != nil {
			return dbutil.RollbackWithoutCancel(ctx, dbutil.Raw{Conn: pg}, err)
		}
	}
	return nil
}

// decodeChunk reads run_chunk's reply: the keys it processed as
// [splitKeys] splits them (an integer key into Processed, any other into
// Keys), next_index and done.
func decodeChunk(body []byte) (ChunkResult, error) {
	var wire struct {
		Processed []Key `json:"processed"`
		NextIndex int   `json:"next_index"`
		Done      bool  `json:"done"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return ChunkResult{}, err
	}
	res := ChunkResult{NextIndex: wire.NextIndex, Done: wire.Done}
	res.Processed, res.Keys = splitKeys(wire.Processed)
	return res, nil
}
