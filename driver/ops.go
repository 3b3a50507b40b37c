package driver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/dbutil"
)

// Register validates plan (docs/contract.md §3) and records it with the
// server's register function: true when the job is new, false when the same
// approval (tenant, normalized targets, chunk size) is already registered. A
// different job under the same id is an [ErrConflict]. Progress is never
// reset.
//
// The contract (docs/contract.md §6) fixes its name and signature.
func Register(ctx context.Context, db DB, plan Plan) (bool, error) {
	p, err := Manifest(plan.JobID, plan.Tenant, plan.Targets, plan.ChunkSize, plan.AllowPartial)
	if err != nil {
		return false, err
	}
	body, err := json.Marshal(p)
	if err != nil {
		return false, err
	}
	var created bool
	if err := db.QueryRow(ctx, "select register($1::jsonb)", string(body)).Scan(&created); err != nil {
		return false, MapError(err)
	}
	return created, nil
}

// InspectJob returns the stored job, or nil (and no error) when there is no
// job with that id. The result is the caller's own copy. It is
// [JobRef.Inspect] of any tenant's job: the contract fixes this signature.
func InspectJob(ctx context.Context, db DB, jobID string) (*Job, error) {
	return JobRef{ID: jobID}.Inspect(ctx, db)
}

// Inspect returns the stored job, or nil (and no error) when there is no
// such job (of j's tenant, when j has one). The result is the caller's own
// copy (SQL inspect_job).
func (j JobRef) Inspect(ctx context.Context, db DB) (*Job, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	var wire struct {
		JobID     string          `json:"job_id"`
		Tenant    string          `json:"tenant"`
		Targets   json.RawMessage `json:"targets"`
		ChunkSize int             `json:"chunk_size"`
		NextIndex int             `json:"next_index"`
		Change    string          `json:"change,omitempty"`
	}
	if found, err := QueryJSON(ctx, db, &wire, "inspect_job", j.Args()...); err != nil || !found {
		return nil, err
	}
	job := Job{JobID: wire.JobID, Tenant: wire.Tenant, ChunkSize: wire.ChunkSize, NextIndex: wire.NextIndex, Change: wire.Change}
	// An orders job's targets read strictly as the contract's; a declared
	// change's are objects of its own fields, kept as stored.
	into, what := any(&job.Targets), "targets"
	if job.Change != "" {
		into, what = &job.ChangeTargets, "change targets"
	}
	if err := decodeResult(wire.Targets, into); err != nil {
		return nil, fmt.Errorf("inspect_job: %s: %w (are the functions installed those of this chunks? run chunks migrate)", what, err)
	}
	return &job, nil
}

// Report reads, in one SELECT on the server, which of the job's approved ids
// are committed or remaining, and whether each committed order is still
// matching, has drifted or is missing. An unknown job is an [ErrConflict].
// It is [JobRef.Report] of any tenant's job: the contract fixes this
// signature.
func Report(ctx context.Context, db DB, jobID string) (JobReport, error) {
	return JobRef{ID: jobID}.Report(ctx, db)
}

// Report is [Report] of the job (SQL report): a job that is not j's
// tenant's is an [ErrConflict] too.
func (j JobRef) Report(ctx context.Context, db DB) (JobReport, error) {
	if err := j.Validate(); err != nil {
		return JobReport{}, err
	}
	var keys ReportKeys
	if _, err := QueryJSON(ctx, db, &keys, "report", j.Args()...); err != nil {
		return JobReport{}, err
	}
	// The lists of one job hold keys of one type: all integers, or none.
	var r JobReport
	var rest []Key
	r.Approved, rest = splitKeys(keys.Approved)
	if rest != nil {
		return JobReport{Approved: []int64{}, Committed: []int64{}, Remaining: []int64{}, Matching: []int64{},
			Drifted: []int64{}, Missing: []int64{}, Skipped: keys.Skipped, Keys: &keys}, nil
	}
	for _, l := range []struct {
		to   *[]int64
		from []Key
	}{{&r.Committed, keys.Committed}, {&r.Remaining, keys.Remaining}, {&r.Matching, keys.Matching}, {&r.Drifted, keys.Drifted}, {&r.Missing, keys.Missing}} {
		if *l.to, rest = splitKeys(l.from); rest != nil {
			return JobReport{}, fmt.Errorf("report: the approved keys are integers but not all the others (are the functions installed those of this chunks? run chunks migrate)")
		}
	}
	r.Skipped = keys.Skipped
	return r, nil
}

// CancelChunk validates items, then cancels those orders of tenant, all or
// none, in ascending id order, and returns the changes in id order. Each
// order must still have the approved revision and qty and be pending; the
// first that is not makes the whole call an [ErrConflict] naming its id.
//
// On a *pgx.Conn or a pool it runs in a transaction of its own and commits.
// On a pgx.Tx it runs inside a savepoint: a failure rolls back only its own
// work, the outer transaction stays open and usable, and nothing is
// committed before the caller commits.
//
// The contract (docs/contract.md §6) fixes its name and signature.
func CancelChunk(ctx context.Context, db DB, tenant string, items []Target) (changes []Change, err error) {
	if err := checkName("tenant", tenant); err != nil {
		return nil, err
	}
	targets, err := normalize("items", items)
	if err != nil {
		return nil, err
	}
	if conn, ok := db.(*pgx.Conn); ok && conn.PgConn().TxStatus() != 'I' {
		return nil, Invalidf("db: the connection is inside a transaction opened outside pgx; pass its pgx.Tx instead")
	}
	body, err := json.Marshal(targets)
	if err != nil {
		return nil, err
	}
	tx, err := db.Begin(ctx) // a savepoint when db is a pgx.Tx
	if err != nil {
		return nil, err
	}
	var out []byte
	if err := tx.QueryRow(ctx, "select cancel_chunk($1, $2::jsonb)::text", tenant, string(body)).Scan(&out); err != nil {
		return nil, dbutil.RollbackWithoutCancel(ctx, tx, MapError(err))
	}
	if err := json.Unmarshal(out, &changes); err != nil {
		return nil, dbutil.RollbackWithoutCancel(ctx, tx, fmt.Errorf("cancel_chunk: %w", err))
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	return changes, nil
}
