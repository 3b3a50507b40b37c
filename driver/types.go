package driver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the non-chunk operations need. It is satisfied by *pgx.Conn,
// pgx.Tx, *pgxpool.Pool and *pgxpool.Conn.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Target is one approved order: cancel order ID of the plan's tenant if it
// still has Revision and Qty and is pending.
type Target struct {
	ID       int64 `json:"id"`
	Revision int64 `json:"revision"`
	Qty      int64 `json:"qty"`
}

// Plan is an approval to register: Targets are normalized (sorted by id,
// no duplicates) by [Manifest] and [ParsePlan].
type Plan struct {
	JobID        string   `json:"job_id"`
	Tenant       string   `json:"tenant"`
	Targets      []Target `json:"targets"`
	ChunkSize    int      `json:"chunk_size"`
	AllowPartial bool     `json:"allow_partial"`
}

// Job is a registered job as stored: the frozen approval and its progress.
// A job of a declared change (register_change) names its Change and keeps
// its targets, objects of the change's fields, as stored in ChangeTargets;
// its Targets, the contract's orders, are then empty.
type Job struct {
	JobID         string            `json:"job_id"`
	Tenant        string            `json:"tenant"`
	Targets       []Target          `json:"targets"`
	ChunkSize     int               `json:"chunk_size"`
	NextIndex     int               `json:"next_index"`
	Change        string            `json:"change,omitempty"`
	ChangeTargets []json.RawMessage `json:"change_targets,omitempty" sql:"-"` // filled in Go from inspect_job's targets
}

// Change is one cancelled order.
type Change struct {
	ID               int64 `json:"id"`
	PreviousRevision int64 `json:"previous_revision"`
	NewRevision      int64 `json:"new_revision"`
	Qty              int64 `json:"qty"`
}

// ChunkResult is what one chunk did: the ids it cancelled (in id order), the
// job's next_index after it, and whether the job is now complete.
//
// For a job of a declared change, Processed holds the keys it changed when
// the change's key is an integer (so such a job reads exactly as an orders
// job); for a text, varchar or uuid key Processed is empty and Keys holds
// them, as the server wrote them. [ChunkResult.AllKeys] is either, as keys.
type ChunkResult struct {
	Processed []int64 `json:"processed"`
	NextIndex int     `json:"next_index"`
	Done      bool    `json:"done"`
	Keys      []Key   `json:"keys,omitempty"`
}

// AllKeys is the keys the chunk changed, whatever their type: Keys, or
// Processed as keys.
func (r ChunkResult) AllKeys() []Key { return keysOf(r.Processed, r.Keys) }

// ReportKeys is a [JobReport]'s six lists for a job of a declared change
// whose key is not an integer, as the server wrote the keys (strings).
type ReportKeys struct {
	Approved  []Key `json:"approved"`
	Committed []Key `json:"committed"`
	Remaining []Key `json:"remaining"`
	Matching  []Key `json:"matching"`
	Drifted   []Key `json:"drifted"`
	Missing   []Key `json:"missing"`
	// Skipped is the targets an operator set aside ([Skip]), in key
	// order: in none of the lists but Approved.
	Skipped []Skip `json:"skipped,omitempty"`
}

// Skip is one target an operator set aside (SQL skip_target, chunks
// skip): its job never changes it, and report lists it as skipped.
type Skip struct {
	JobID  string    `json:"job_id,omitempty"` // its job, in a campaign's report
	Key    Key       `json:"key"`
	Reason string    `json:"reason"`
	By     string    `json:"by"` // the session_user that skipped it
	At     time.Time `json:"at"`
	// Found is what the change's check said of its row when it was
	// skipped ("payment_id 5: lock_version is 9, approved 3"); "" when the
	// row matched.
	Found string `json:"found"`
}

// JobReport lists a job's ids: all Approved, the Committed prefix and the
// Remaining rest, and each committed id as Matching (the order still looks
// the way the job left it), Drifted (changed since) or Missing (gone).
type JobReport struct {
	Approved  []int64 `json:"approved"`
	Committed []int64 `json:"committed"`
	Remaining []int64 `json:"remaining"`
	Matching  []int64 `json:"matching"`
	Drifted   []int64 `json:"drifted"`
	Missing   []int64 `json:"missing"`
	// Skipped is the targets an operator set aside ([Skip]), in key
	// order: in none of the lists but Approved.
	Skipped []Skip `json:"skipped,omitempty"`
	// Keys holds the six lists instead for a job of a declared change
	// whose key is not an integer (the int lists are then empty); an
	// integer key fills the int lists, as an orders job does.
	Keys *ReportKeys `json:"keys,omitempty" sql:"-"`
}

// AllKeys is the report's six lists as keys, whatever their type: Keys,
// or the int lists as keys.
func (r JobReport) AllKeys() ReportKeys {
	if r.Keys != nil {
		return *r.Keys
	}
	return ReportKeys{Approved: keysOf(r.Approved, nil), Committed: keysOf(r.Committed, nil), Remaining: keysOf(r.Remaining, nil),
		Matching: keysOf(r.Matching, nil), Drifted: keysOf(r.Drifted, nil), Missing: keysOf(r.Missing, nil), Skipped: r.Skipped}
}

// DrainResult sums up a [Drain]: the calls that returned a result, the ids
// those calls processed (concatenated, so in id order), and the last call's
// NextIndex and Done. Keys is filled as [ChunkResult]'s is: for a declared
// change whose key is not an integer.
type DrainResult struct {
	Calls     int     `json:"calls"`
	Processed []int64 `json:"processed"`
	NextIndex int     `json:"next_index"`
	Done      bool    `json:"done"`
	Keys      []Key   `json:"keys,omitempty"`
}

// AllKeys is the keys the drain changed, whatever their type: Keys, or
// Processed as keys.
func (r DrainResult) AllKeys() []Key { return keysOf(r.Processed, r.Keys) }

// Fault is called at each hook point of a chunk (see [RunChunk]) with the
// point's name. Returning an error before COMMIT rolls the chunk back.
type Fault func(point string) error

// The four hook points of a chunk, in the order they are reached.
const (
	AfterOrders     = "after-orders"     // the orders are cancelled (not committed)
	AfterAudit      = "after-audit"      // the audit rows are written (not committed)
	AfterCheckpoint = "after-checkpoint" // next_index is moved (not committed)
	AfterCommit     = "after-commit"     // the chunk is committed
)

// Points lists the hook points in order.
var Points = []string{AfterOrders, AfterAudit, AfterCheckpoint, AfterCommit}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// MarshalJSON writes Targets as [] when empty, never null.
func (p Plan) MarshalJSON() ([]byte, error) {
	type plain Plan
	q := plain(p)
	q.Targets = nonNil(q.Targets)
	return json.Marshal(q)
}

// MarshalJSON writes Targets as [] when empty, never null.
func (j Job) MarshalJSON() ([]byte, error) {
	type plain Job
	q := plain(j)
	q.Targets = nonNil(q.Targets)
	return json.Marshal(q)
}

// MarshalJSON writes Processed as [] when empty, never null.
func (r ChunkResult) MarshalJSON() ([]byte, error) {
	type plain ChunkResult
	q := plain(r)
	q.Processed = nonNil(q.Processed)
	return json.Marshal(q)
}

// MarshalJSON writes every list as [] when empty, never null.
func (r JobReport) MarshalJSON() ([]byte, error) {
	type plain JobReport
	q := plain(r)
	q.Approved, q.Committed, q.Remaining = nonNil(q.Approved), nonNil(q.Committed), nonNil(q.Remaining)
	q.Matching, q.Drifted, q.Missing = nonNil(q.Matching), nonNil(q.Drifted), nonNil(q.Missing)
	return json.Marshal(q)
}

// MarshalJSON writes Processed as [] when empty, never null.
func (r DrainResult) MarshalJSON() ([]byte, error) {
	type plain DrainResult
	q := plain(r)
	q.Processed = nonNil(q.Processed)
	return json.Marshal(q)
}
