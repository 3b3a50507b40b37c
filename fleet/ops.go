package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chunks-dev/chunks/driver"
)

// The states of a job in [JobStatus].
const (
	StateQueued = "queued" // claimable from VisibleAt (now, or after a --rate delay)
	StateLeased = "leased" // a worker holds it until LeaseUntil
	StatePaused = "paused" // never claimed until [Resume]
	StateDone   = "done"   // next_index = n; not in the queue
	StateIdle   = "idle"   // unfinished and not in the queue; [Resume] queues it
)

// JobStatus is one job as chunks status shows it.
type JobStatus struct {
	JobID      string     `json:"job_id"`
	Tenant     string     `json:"tenant"`
	NextIndex  int        `json:"next_index"`
	N          int        `json:"n"` // the number of targets
	State      string     `json:"state"`
	LeasedBy   *string    `json:"leased_by"`   // the worker id, when leased
	LeaseUntil *time.Time `json:"lease_until"` // when leased
	VisibleAt  *time.Time `json:"visible_at"`  // when queued: claimable from then on
	// Drift counts the committed orders that [driver.Report] would call
	// drifted or missing; nil when the stored job cannot be read.
	Drift *int `json:"drift"`
}

// Claim is a lease on one job: what [ClaimJob] took and [ReleaseJob] gives
// back.
type Claim struct {
	JobID   string `json:"job_id"`
	Receipt int64  `json:"receipt"`
}

// Status lists every job of the schema with its fleet state, ordered by job
// id (the SQL function job_status). It reads only.
func Status(ctx context.Context, db driver.DB) ([]JobStatus, error) {
	var body []byte
	if err := db.QueryRow(ctx, "select job_status()::text").Scan(&body); err != nil {
		return nil, driver.MapError(err)
	}
	out := []JobStatus{}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("job_status: %w", err)
	}
	return out, nil
}

// Pause stops the fleet from claiming the job until [Resume]. A chunk in
// flight finishes first (the call waits for it), and a worker that claimed
// the job just before may still run that one chunk. It returns true when it
// paused the job, false when the job was already paused. An unknown or
// finished job is an [driver.ErrConflict].
func Pause(ctx context.Context, db driver.DB, jobID string) (bool, error) {
	return jobCall(ctx, db, "select pause_job($1)", jobID)
}

// Resume queues a paused job again, visible at once, and wakes the workers.
// An unfinished job with no queue row at all (state idle) is queued too. It
// returns true when it queued the job, false when the job was already
// queued or leased. An unknown or finished job is an [driver.ErrConflict].
func Resume(ctx context.Context, db driver.DB, jobID string) (bool, error) {
	return jobCall(ctx, db, "select resume_job($1)", jobID)
}

func jobCall(ctx context.Context, db driver.DB, sql, jobID string) (bool, error) {
	if err := driver.CheckJobID(jobID); err != nil {
		return false, err
	}
	var changed bool
	if err := db.QueryRow(ctx, sql, jobID).Scan(&changed); err != nil {
		return false, driver.MapError(err)
	}
	return changed, nil
}

// ClaimJob leases the next runnable job for worker for lease (SQL
// claim_job: SKIP LOCKED, so concurrent claimers take different jobs). It
// returns nil when no job is runnable.
func ClaimJob(ctx context.Context, db driver.DB, worker string, lease time.Duration) (*Claim, error) {
	var body []byte
	if err := db.QueryRow(ctx, "select claim_job($1, $2)::text", worker, lease.Milliseconds()).Scan(&body); err != nil {
		return nil, driver.MapError(err)
	}
	if body == nil {
		return nil, nil
	}
	var c Claim
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("claim_job: %w", err)
	}
	return &c, nil
}

// ReleaseJob ends the lease c (SQL release_job). done removes a finished
// job from the queue; otherwise the job is claimable again after delay (0:
// at once, behind every job already waiting). It returns false, changing
// nothing, when the lease was lost: it ran out and another worker claimed
// the job since.
func ReleaseJob(ctx context.Context, db driver.DB, c Claim, done bool, delay time.Duration) (bool, error) {
	var released bool
	err := db.QueryRow(ctx, "select release_job($1, $2, $3, $4)", c.JobID, c.Receipt, done, delay.Milliseconds()).Scan(&released)
	if err != nil {
		return false, driver.MapError(err)
	}
	return released, nil
}

func invalidf(format string, args ...any) error {
	return &driver.Error{Kind: driver.ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}
