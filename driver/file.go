package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/chunktx"
)

// ConnectTimeout bounds opening a connection in [ChunkFile] and [Drain],
// whatever the DSN says.
const ConnectTimeout = 2 * time.Second

// parseDSN reads a connection string (URL or keyword/value; the libpq PG*
// variables fill what it leaves out), sets the connect timeout, and makes a
// cancelled context cancel the chunk in flight on the server.
func parseDSN(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, &Error{Kind: ErrInvalid, Msg: "dsn: " + err.Error(), Err: err}
	}
	cfg.ConnectTimeout = ConnectTimeout
	chunktx.CancelOnContext(&cfg.Config)
	return cfg, nil
}

// ChunkFile opens its own connection from dsn (autocommit; connect timeout
// 2 s; the DSN may set search_path, e.g. options=-csearch_path=lab), runs
// [RunChunk] on it and closes it again, on success, on error and on panic.
// If the client dies after COMMIT but before hearing the answer, the next
// call does the next chunk, never the finished one again.
func ChunkFile(ctx context.Context, dsn, jobID string, fault Fault) (res ChunkResult, err error) {
	if err := checkName("job_id", jobID); err != nil {
		return ChunkResult{}, err
	}
	cfg, err := parseDSN(dsn)
	if err != nil {
		return ChunkResult{}, err
	}
	return chunkFile(ctx, cfg, jobID, fault)
}

func chunkFile(ctx context.Context, cfg *pgx.ConnConfig, jobID string, fault Fault) (res ChunkResult, err error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return ChunkResult{}, err
	}
	defer func() {
		if cerr := conn.Close(context.WithoutCancel(ctx)); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close: %w", cerr))
		}
	}()
	return RunChunk(ctx, conn, jobID, fault)
}

// Drain runs the job's chunks one [ChunkFile] call at a time, at most
// maxChunks (1 to 64) calls, stopping as soon as a call returns Done. The
// id, maxChunks and the DSN's syntax are checked before any connection is
// opened. Calls counts the calls that returned a result (an empty call that
// only learns Done counts); Processed concatenates what this drain's calls
// processed. Any error returns at once, with the result gathered so far and
// no retry.
func Drain(ctx context.Context, dsn, jobID string, maxChunks int) (DrainResult, error) {
	if err := checkName("job_id", jobID); err != nil {
		return DrainResult{}, err
	}
	if err := checkMaxChunks(maxChunks); err != nil {
		return DrainResult{}, err
	}
	cfg, err := parseDSN(dsn)
	if err != nil {
		return DrainResult{}, err
	}
	out := DrainResult{Processed: []int64{}}
	for out.Calls < maxChunks {
		r, err := chunkFile(ctx, cfg.Copy(), jobID, nil)
		if err != nil {
			return out, err
		}
		out.Calls++
		out.Processed = append(out.Processed, r.Processed...)
		out.NextIndex, out.Done = r.NextIndex, r.Done
		if r.Done {
			break
		}
	}
	return out, nil
}
