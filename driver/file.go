package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/internal/chunktx"
)

// ConnectTimeout bounds opening a connection in [ChunkFile] and [Drain],
// whatever the DSN says.
const ConnectTimeout = 2 * time.Second

// ParseDSN reads a connection string (a URL postgres://… or key=value
// pairs; the libpq PG* variables fill what it leaves out) into a config with
// the 2 s [ConnectTimeout], on which a cancelled context cancels the
// statement in flight on the server (a cancel request: a chunk then rolls
// back). A string that cannot be parsed is an [ErrInvalid] whose text never
// shows the string, since it may hold a password. Set the schema with
// cfg.RuntimeParams["search_path"].
func ParseDSN(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, NewError(ErrInvalid, err, "dsn: %s (the connection string is not shown: it may hold a password)", dsnProblem(err))
	}
	cfg.ConnectTimeout = ConnectTimeout
	chunktx.CancelOnContext(&cfg.Config)
	return cfg, nil
}

// dsnProblem is what pgx found wrong with a connection string, without the
// string: pgx's own text shows it, with passwords masked only on a best
// effort basis (a "password = x" with spaces, a password holding @). Only
// pgx's fixed wording is kept ("invalid port"); wording that quotes a part of
// the string is dropped.
func dsnProblem(err error) string {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		text := pe.Error() // "cannot parse `…`: msg" or "… msg (inner error)"
		if inner := pe.Unwrap(); inner != nil {
			text = strings.TrimSuffix(text, " ("+inner.Error()+")")
		}
		if i := strings.LastIndex(text, "`: "); i >= 0 && !strings.ContainsAny(text[i+3:], "\"'`=:@\\") {
			return "cannot parse it: " + text[i+3:]
		}
	}
	return "cannot parse it as a URL (postgres://…) or as key=value pairs"
}

// ChunkFile opens its own connection from dsn (autocommit; connect timeout
// 2 s; the DSN may set search_path, e.g. options=-csearch_path=lab), runs
// [RunChunk] on it and closes it again, on success, on error and on panic.
// If the client dies after COMMIT but before hearing the answer, the next
// call does the next chunk, never the finished one again.
//
// The contract fixes this signature; [ChunkFileConfig] takes a [JobRef].
func ChunkFile(ctx context.Context, dsn, jobID string, fault Fault) (ChunkResult, error) {
	job := JobRef{ID: jobID}
	if err := job.Validate(); err != nil {
		return ChunkResult{}, err
	}
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return ChunkResult{}, err
	}
	return ChunkFileConfig(ctx, cfg, job, fault)
}

// ChunkFileConfig is [ChunkFile] on a parsed config (see [ParseDSN]). Its
// connection has the 2 s connect timeout and cancels on the server when ctx
// is cancelled, whatever cfg says; cfg itself is not changed. It runs
// [JobRef.RunChunk] of job: on one server or through a chunks router.
func ChunkFileConfig(ctx context.Context, cfg *pgx.ConnConfig, job JobRef, fault Fault) (res ChunkResult, err error) {
	if err := job.Validate(); err != nil {
		return ChunkResult{}, err
	}
	if cfg == nil {
		return ChunkResult{}, Invalidf("cfg: is nil")
	}
	own := cfg.Copy()
	own.ConnectTimeout = ConnectTimeout
	chunktx.CancelOnContext(&own.Config)
	conn, err := pgx.ConnectConfig(ctx, own)
	if err != nil {
		return ChunkResult{}, err
	}
	defer func() {
		if cerr := conn.Close(context.WithoutCancel(ctx)); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close: %w", cerr))
		}
	}()
	return job.RunChunk(ctx, conn, fault)
}

// Drain runs the job's chunks one [ChunkFile] call at a time, at most
// maxChunks (1 to 64) calls, stopping as soon as a call returns Done. The
// id, maxChunks and the DSN's syntax are checked before any connection is
// opened. Calls counts the calls that returned a result (an empty call that
// only learns Done counts); Processed concatenates what this drain's calls
// processed. Any error returns at once, with the result gathered so far and
// no retry. The contract fixes this signature; [DrainConfig] takes a
// [JobRef] and a [Pacer].
func Drain(ctx context.Context, dsn, jobID string, maxChunks int) (DrainResult, error) {
	job := JobRef{ID: jobID}
	if err := job.Validate(); err != nil {
		return DrainResult{}, err
	}
	if err := checkMaxChunks(maxChunks); err != nil {
		return DrainResult{}, err
	}
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return DrainResult{}, err
	}
	return DrainConfig(ctx, cfg, job, maxChunks, nil)
}

// Pacer holds a drain's next call back while the database's health says
// so (package pace has one: replica lag, a throttle query). Wait returns
// when the next call may start, or with ctx's error; Committed is told of
// every call that committed a chunk.
type Pacer interface {
	Wait(ctx context.Context) error
	Committed()
}

// DrainConfig is [Drain] on a parsed config (see [ParseDSN]), each call on
// a connection of its own ([ChunkFileConfig]). With a pacer, each call
// waits for it first: waiting is not a call, so the counting and the "no
// retry" rule are unchanged; a ctx that ends while waiting returns ctx's
// error with the result so far. With job's tenant the drain runs through
// a chunks router as well as on one server: each call is one transaction
// on the tenant's shard, on a router connection of its own.
func DrainConfig(ctx context.Context, cfg *pgx.ConnConfig, job JobRef, maxChunks int, pacer Pacer) (DrainResult, error) {
	if err := job.Validate(); err != nil {
		return DrainResult{}, err
	}
	if err := checkMaxChunks(maxChunks); err != nil {
		return DrainResult{}, err
	}
	out := DrainResult{Processed: []int64{}}
	for out.Calls < maxChunks {
		if pacer != nil {
			if err := pacer.Wait(ctx); err != nil {
				return out, err
			}
		}
		r, err := ChunkFileConfig(ctx, cfg, job, nil)
		if err != nil {
			return out, err
		}
		if pacer != nil && (len(r.Processed) > 0 || len(r.Keys) > 0) {
			pacer.Committed()
		}
		out.Calls++
		out.Processed = append(out.Processed, r.Processed...)
		out.Keys = append(out.Keys, r.Keys...)
		out.NextIndex, out.Done = r.NextIndex, r.Done
		if r.Done {
			break
		}
	}
	return out, nil
}
