package router

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/chunktx"
)

// Shard is one shard of a router: its partition name (p0, p1, ...) and the
// connection string the router's server uses for it (without the
// password, which is in the user mapping).
type Shard struct {
	Name     string `json:"shard"`
	Conninfo string `json:"conninfo"`
}

// Shards lists the router's shards in partition order (SQL shards()). It
// reads the router's catalog only. A secret in a connection string
// (password, sslpassword, written there by hand, since Install never
// does) is shown as (not shown), and a string that cannot be parsed is not
// shown at all.
func Shards(ctx context.Context, db driver.DB) ([]Shard, error) {
	out := []Shard{}
	if err := value(ctx, db, &out, "shards", "select shards()::text"); err != nil {
		return nil, err
	}
	for i, s := range out {
		c, err := parseConninfo(s.Conninfo)
		if err != nil {
			out[i].Conninfo = "(not shown: it cannot be parsed, and may hold a password)"
			continue
		}
		out[i].Conninfo = c.masked().String()
	}
	return out, nil
}

// ShardOf names the shard of tenant (SQL shard_of): partition hashtext(tenant)
// & (N - 1) of the N shards, where every order, job, audit and queue row of
// the tenant lives.
func ShardOf(ctx context.Context, db driver.DB, tenant string) (string, error) {
	if err := driver.CheckTenant(tenant); err != nil {
		return "", err
	}
	var shard string
	if err := db.QueryRow(ctx, "select shard_of($1)", tenant).Scan(&shard); err != nil {
		return "", driver.MapError(err)
	}
	return shard, nil
}

// InspectJob is [driver.InspectJob] of tenant's job, read on the tenant's
// shard: nil (and no error) when that shard has no such job of tenant.
func InspectJob(ctx context.Context, db driver.DB, tenant, jobID string) (*driver.Job, error) {
	return jobValue[*driver.Job](ctx, db, "inspect_job", tenant, jobID)
}

// Report is [driver.Report] of tenant's job, read on the tenant's shard. A
// job that shard does not hold for tenant is an [driver.ErrConflict].
func Report(ctx context.Context, db driver.DB, tenant, jobID string) (driver.JobReport, error) {
	return jobValue[driver.JobReport](ctx, db, "report", tenant, jobID)
}

// Pause is fleet.Pause of tenant's job, on the tenant's shard, whose
// workers it stops.
func Pause(ctx context.Context, db driver.DB, tenant, jobID string) (bool, error) {
	return jobFlag(ctx, db, "select pause_job($1, $2)", tenant, jobID)
}

// Resume is fleet.Resume of tenant's job, on the tenant's shard, whose
// workers are woken.
func Resume(ctx context.Context, db driver.DB, tenant, jobID string) (bool, error) {
	return jobFlag(ctx, db, "select resume_job($1, $2)", tenant, jobID)
}

// PauseAfter is [fleet.PauseAfter] of tenant's job, on the tenant's shard:
// the canary. That shard's workers run n (1 to [fleet.MaxPauseAfter]) more
// chunks of the job, and the pass that commits the n-th pauses it in the
// same transaction. It returns true when it changed the queue, false when
// the same canary was already pending. A job that shard does not hold for
// tenant, a finished or undone one, or n not below the chunks it has left,
// is an [driver.ErrConflict].
func PauseAfter(ctx context.Context, db driver.DB, tenant, jobID string, n int) (bool, error) {
	if n < 1 || n > fleet.MaxPauseAfter {
		return false, driver.Invalidf("after: must be between 1 and %d chunks, got %d", fleet.MaxPauseAfter, n)
	}
	return jobFlag(ctx, db, "select pause_job_after($1, $2, $3)", tenant, jobID, n)
}

func jobFlag(ctx context.Context, db driver.DB, sql, tenant, jobID string, args ...any) (bool, error) {
	if err := checkJob(tenant, jobID); err != nil {
		return false, err
	}
	var changed bool
	if err := db.QueryRow(ctx, sql, append([]any{tenant, jobID}, args...)...).Scan(&changed); err != nil {
		return false, driver.MapError(err)
	}
	return changed, nil
}

// RegisterUndo is [driver.RegisterUndo] of tenant's job, on the tenant's
// shard: the undo is built there from the job's committed part and
// registered there as newJobID ("" means jobID + "-undo"), a job of tenant
// queued for that shard's workers (run it with [RunChunk] or [Drain] and
// tenant). newJobID is checked on the shard ([driver.ErrInvalid] naming
// new_job_id). A job that shard does not hold for tenant is an
// [driver.ErrConflict], as are register_undo's own refusals.
func RegisterUndo(ctx context.Context, db driver.DB, tenant, jobID, newJobID string) (driver.Undo, error) {
	var newID *string // NULL: the shard derives it
	if newJobID != "" {
		newID = &newJobID
	}
	return jobValue[driver.Undo](ctx, db, "register_undo", tenant, jobID, newID)
}

// Lineage is [driver.Lineage] of tenant's job, read on the tenant's shard:
// its kind and its undo, or nil (and no error) when that shard has no such
// job of tenant.
func Lineage(ctx context.Context, db driver.DB, tenant, jobID string) (*driver.JobLineage, error) {
	return jobValue[*driver.JobLineage](ctx, db, "job_lineage", tenant, jobID)
}

// RunChunk runs the next chunk of tenant's job through the router on conn,
// in one round trip: BEGIN, SET LOCAL lock_timeout and statement_timeout
// (2 s: when it fires, PL/Proxy cancels the statement on the shard, and the
// chunk rolls back unless it had committed), SELECT run_chunk(tenant, job)
// and COMMIT, as [driver.RunChunk] sends them. The chunk is ONE transaction
// on the tenant's shard, committed there within the call: no hook can run
// between its steps and its COMMIT, so there is no [driver.Fault] here (crash
// drills run on the shard itself). conn is borrowed: it must be idle, and it
// is left idle with its settings as they were. A shard that cannot be
// reached is SQLSTATE 08006, naming it; every other error is the shard's
// own, as [driver.RunChunk] returns it.
func RunChunk(ctx context.Context, conn *pgx.Conn, tenant, jobID string) (driver.ChunkResult, error) {
	if err := checkJob(tenant, jobID); err != nil {
		return driver.ChunkResult{}, err
	}
	if conn == nil {
		return driver.ChunkResult{}, driver.Invalidf("conn: is nil")
	}
	if status := conn.PgConn().TxStatus(); status != 'I' {
		return driver.ChunkResult{}, driver.Invalidf("conn: is inside a transaction (status %q); RunChunk commits, so it needs an idle connection", status)
	}
	body, err := chunktx.Call(ctx, conn.PgConn(), "select run_chunk($1, $2)::text",
		chunktx.Arg{Text: tenant, OID: pgtype.TextOID}, chunktx.Arg{Text: jobID, OID: pgtype.TextOID})
	if err != nil {
		return driver.ChunkResult{}, driver.MapError(err)
	}
	var res driver.ChunkResult
	if err := json.Unmarshal(body, &res); err != nil {
		return driver.ChunkResult{}, fmt.Errorf("run_chunk: committed, but its reply does not read: %w", err)
	}
	if res.Processed == nil {
		res.Processed = []int64{}
	}
	return res, nil
}

// Drain runs tenant's job to its end through the router, one [RunChunk] on
// conn per chunk, at most maxChunks (1 to 64) calls, with the counting and
// the "no retry" rule of [driver.Drain] ([driver.DrainFunc]). A pacer, if
// any, is waited for before each call.
func Drain(ctx context.Context, conn *pgx.Conn, tenant, jobID string, maxChunks int, pacer driver.Pacer) (driver.DrainResult, error) {
	if err := checkJob(tenant, jobID); err != nil {
		return driver.DrainResult{}, err
	}
	return driver.DrainFunc(ctx, maxChunks, pacer, func(ctx context.Context) (driver.ChunkResult, error) {
		return RunChunk(ctx, conn, tenant, jobID)
	})
}

// checkJob checks a job-scoped call's names before any connection.
func checkJob(tenant, jobID string) error {
	if err := driver.CheckTenant(tenant); err != nil {
		return err
	}
	return driver.CheckJobID(jobID)
}

// jobValue checks the names, runs the router's fn(tenant, job_id, args...),
// which returns one jsonb value, and decodes it into a T (a JSON null is
// T's zero value: nil for a pointer).
func jobValue[T any](ctx context.Context, db driver.DB, fn, tenant, jobID string, args ...any) (T, error) {
	var out T
	if err := checkJob(tenant, jobID); err != nil {
		return out, err
	}
	params := "$1, $2"
	for i := range args {
		params += fmt.Sprintf(", $%d", i+3)
	}
	if err := value(ctx, db, &out, fn, "select "+fn+"("+params+")::text", append([]any{tenant, jobID}, args...)...); err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// value runs sql, which returns one jsonb value as text, and decodes it
// into out (a JSON null leaves a pointer nil).
func value(ctx context.Context, db driver.DB, out any, what, sql string, args ...any) error {
	var body []byte
	if err := db.QueryRow(ctx, sql, args...).Scan(&body); err != nil {
		return driver.MapError(err)
	}
	if body == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
