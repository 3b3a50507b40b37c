package driver

import (
	"context"
	"encoding/json"
)

// The kinds of change a job applies (the tables job_kind and job_change).
const (
	KindCancel  = "cancel"  // pending -> cancelled: a job made by [Register]
	KindRestore = "restore" // cancelled -> pending: an undo made by [RegisterUndo]
	KindChange  = "change"  // a declared change of the user's table: a job made by [RegisterChange]
)

// Undo is a registered undo ([RegisterUndo], SQL register_undo).
type Undo struct {
	JobID   string `json:"job_id"` // the undo job
	Undoes  string `json:"undoes"` // the job it undoes
	Created bool   `json:"created"`
	// Change is the declared change of the undone job ([RegisterChange]),
	// whose undo is a job of the same change; empty for an orders job.
	Change string `json:"change,omitempty"`
	// Targets are the keys the undo restores: the undone job's committed
	// targets that were still exactly as it left them (order ids for an
	// orders job; a declared change's keys, numbers for integer keys,
	// strings otherwise, objects for a composite key). Drifted and Missing
	// are its other committed targets (changed since, or gone), left alone.
	Targets []Key `json:"targets"`
	Drifted []Key `json:"drifted"`
	Missing []Key `json:"missing"`
}

// MarshalJSON writes every list as [] when empty, never null.
func (u Undo) MarshalJSON() ([]byte, error) {
	type plain Undo
	q := plain(u)
	q.Targets, q.Drifted, q.Missing = nonNil(q.Targets), nonNil(q.Drifted), nonNil(q.Missing)
	return json.Marshal(q)
}

// JobLineage is a job's kind and its undo ([Lineage], SQL job_lineage).
type JobLineage struct {
	JobID    string  `json:"job_id"`
	Kind     string  `json:"kind"`             // [KindCancel], [KindChange] (a declared change's job) or [KindRestore] (an undo)
	Change   *string `json:"change,omitempty"` // the declared change of a change's job or of its undo; nil for orders
	Undoes   *string `json:"undoes"`           // the job this undo undoes
	UndoneBy *string `json:"undone_by"`        // the undo of this job
}

// RegisterUndo builds the compensating job of the job and registers it as
// newJobID, as one approval, in one transaction. Empty newJobID means
// the job's id + "-undo"; when that would pass [MaxNameLen] characters, it is an
// [ErrInvalid] naming new_job_id and the id must be given.
//
// The undo's targets are the job's committed orders that are still exactly as
// it left them (what [Report] calls matching), each approved at the
// revision the job left. Each of its chunks restores them to state 'pending'
// with revision + 1 and writes one audit row each: it is a job like any
// other, with the job's chunk size, queued for the fleet, run by [RunChunk]
// and [Drain], and reported by [Report] (matching: pending, approved
// revision + 1). Drifted and missing orders are listed and left alone.
//
// A job of a declared change ([RegisterChange]) is undone by the same
// rules: its undo is a job of the same change that gives the committed
// rows still as the job left them their before values back (from the
// change's audit), with version + 1, audited; its lists are the rows' keys.
//
// Re-running the same undo changes nothing (Created false). An
// [ErrConflict] refuses an unknown job, an undo (an undo is not undone), a
// job undone already under another id, a newJobID taken by another job, a
// job that can still make progress (unfinished and not paused: pause it
// first), an unsound job, and a job with nothing to undo.
//
// With a tenant (j.Tenant), the job must be that tenant's (SQL
// register_undo(tenant, job_id, new_job_id)); through a chunks router the
// undo is registered on the job's shard, as a job of the same tenant.
func (j JobRef) RegisterUndo(ctx context.Context, db DB, newJobID string) (Undo, error) {
	if err := j.Validate(); err != nil {
		return Undo{}, err
	}
	var newID *string // NULL: the server derives it
	if newJobID != "" {
		if err := checkName("new_job_id", newJobID); err != nil {
			return Undo{}, err
		}
		newID = &newJobID
	}
	var u Undo
	if _, err := QueryJSON(ctx, db, &u, "register_undo", j.Args(newID)...); err != nil {
		return Undo{}, err
	}
	u.Targets, u.Drifted, u.Missing = nonNil(u.Targets), nonNil(u.Drifted), nonNil(u.Missing)
	return u, nil
}

// Lineage returns the job's kind and its undo, or nil (and no error) when
// there is no such job (of j's tenant, when j has one).
func (j JobRef) Lineage(ctx context.Context, db DB) (*JobLineage, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	var l JobLineage
	if found, err := QueryJSON(ctx, db, &l, "job_lineage", j.Args()...); err != nil || !found {
		return nil, err
	}
	return &l, nil
}
