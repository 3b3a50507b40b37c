package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/chunktx"
)

// The states of a job in [JobStatus].
const (
	StateQueued  = "queued"  // runnable from VisibleAt (now, or after a --rate or retry rest)
	StateRunning = "running" // a chunk of it is in flight, in the session RunningIn
	StatePaused  = "paused"  // no worker starts a chunk of it until [Resume]
	StateDone    = "done"    // next_index = n; not in the queue
	StateIdle    = "idle"    // unfinished and not in the queue; [Resume] queues it
	// StateAbandoned: ended for good by [Abandon]; its remaining targets are
	// never run (PauseReason, PausedAt and PausedBy say why, when, by whom).
	StateAbandoned = "abandoned"
	// StateProposed: registered under a two-person policy and not yet
	// approved (docs/safety.md "Two people"); no worker runs it until
	// another role approves it. PauseReason says who proposed it.
	StateProposed = "proposed"
)

// States is every state of a job, in the order chunks status, the status
// page and the metrics list them.
var States = []string{StateQueued, StateRunning, StatePaused, StateDone, StateIdle, StateAbandoned, StateProposed}

// JobStatus is one job as chunks status shows it.
type JobStatus struct {
	JobID     string `json:"job_id"`
	Tenant    string `json:"tenant"`
	NextIndex int    `json:"next_index"`
	N         int    `json:"n"` // the number of targets
	ChunkSize int    `json:"chunk_size"`
	State     string `json:"state"`
	// RunningIn is the session a chunk in flight runs in (a worker's id,
	// or "pid N"), when running.
	RunningIn *string    `json:"running_in"`
	VisibleAt *time.Time `json:"visible_at"` // when queued: runnable from then on
	// PauseReason, PausedAt and PausedBy say why, when and by whom (a
	// worker id, or the operator's role) the job was paused; nil unless
	// paused.
	PauseReason *string    `json:"pause_reason"`
	PausedAt    *time.Time `json:"paused_at"`
	PausedBy    *string    `json:"paused_by"`
	// PauseAfter, while the job is queued or running, is how many more
	// chunks the fleet runs before the job pauses itself ([PauseAfter]);
	// nil when no canary is pending.
	PauseAfter *int `json:"pause_after"`
	// Kind is the change the job applies: [driver.KindCancel],
	// [driver.KindRestore] for an undo ([driver.JobRef.RegisterUndo]), or
	// [driver.KindChange] for a job of a declared change ([driver.RegisterChange]).
	// Change is the name of the declared change of a change's job or of
	// its undo (nil for other jobs). Undoes names the job an
	// undo undoes; UndoneBy the undo of this job. Both are nil when there
	// is none.
	Kind     string  `json:"kind"`
	Change   *string `json:"change"`
	Undoes   *string `json:"undoes"`
	UndoneBy *string `json:"undone_by"`
	// Drift counts the committed orders that [driver.Report] would call
	// drifted or missing; nil when the stored job cannot be read.
	Drift *int `json:"drift"`
	// ProgressedAt is when a fleet worker last saw the job move forward,
	// and Rate its recent rate in ids per second, over the last one to two
	// minutes of its progress; nil until known (a job moved only by chunks
	// drain or run has none).
	ProgressedAt *time.Time `json:"progressed_at"`
	Rate         *float64   `json:"rate"`
	// ETA is when the job will be done at its recent rate, or why that
	// cannot be said ([Estimate]): worked out in Go, not read from SQL.
	ETA ETA `json:"eta" sql:"-"`
	// Approval is a two-person job's proposal and approval (docs/safety.md
	// "Two people"); nil for a one-person job.
	Approval *JobApproval `json:"approval"`
	// Shard is the shard that holds the job ("p0", ...) when the status
	// was read through a chunks router (package router); "" on one server.
	Shard string `json:"shard,omitempty"`
}

// JobApproval is who proposed a two-person job and who approved it when.
type JobApproval struct {
	ProposedBy string     `json:"proposed_by"`
	ProposedAt time.Time  `json:"proposed_at"`
	ApprovedBy *string    `json:"approved_by"` // nil while it waits (StateProposed)
	ApprovedAt *time.Time `json:"approved_at"`
	Digest     string     `json:"digest"` // the approval digest, 64 hex characters
	Signed     bool       `json:"signed"` // the approver gave an SSH signature of Digest
}

// WorkerStatus is one live worker as chunks status shows it (its heartbeat
// row, seen in the last 10 s).
type WorkerStatus struct {
	WorkerID  string    `json:"worker_id"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
	LastSeen  time.Time `json:"last_seen"`
	Chunks    int64     `json:"chunks"` // committed since it started
	State     string    `json:"state"`  // running, idle or throttled
	Reason    *string   `json:"reason"` // why, when throttled
	// Shard is the shard the worker serves, when read through a chunks
	// router; "" on one server.
	Shard string `json:"shard,omitempty"`
}

// Workers lists the live workers, ordered by id (the SQL function
// worker_status). It reads only. Through a chunks router it lists the
// workers of every shard, ordered by id, then shard, each with its Shard.
func Workers(ctx context.Context, db driver.DB) ([]WorkerStatus, error) {
	out := []WorkerStatus{}
	if _, err := driver.QueryJSON(ctx, db, &out, "worker_status"); err != nil {
		return nil, err
	}
	return out, nil
}

// Pass is what one worker pass did ([RunNext], SQL run_next_chunk): nil
// when nothing was runnable. Exactly one of three things happened to JobID:
//   - a chunk committed (Err empty): Processed, NextIndex and Done as in
//     [driver.ChunkResult]; a finished job left the queue. When a canary
//     ([PauseAfter]) is pending, PauseAfter is how many chunks it still
//     lets run, and Paused says that this chunk was its last: the job is
//     paused, in the same commit;
//   - the chunk rolled back with an error that is not transient (Paused,
//     with SQLState and Err): the job is paused. That is a conflict, or a
//     job that cannot be run at all ([Pass.Conflict]), or any other error
//     that comes back at every try, such as a trigger's exception
//     ([Pass.PausedByError]);
//   - the chunk rolled back with a transient error ([TransientChunkError]:
//     a lock wait over 500 ms, a statement timeout, a deadlock...): the job
//     rests RestMs before any worker takes it.
type Pass struct {
	JobID      string       `json:"job_id"`
	Processed  []driver.Key `json:"processed"` // the keys the chunk changed: order ids, or a declared change's keys of any shape
	NextIndex  int          `json:"next_index"`
	Done       bool         `json:"done"`
	SQLState   string       `json:"sqlstate,omitempty"`
	Err        string       `json:"error,omitempty"`
	Paused     bool         `json:"paused,omitempty"`
	PauseAfter *int         `json:"pause_after,omitempty"`
	RestMs     int64        `json:"rest_ms,omitempty"`
	// ChangeJob says the chunk was of a declared change's job: its size
	// followed [PassOptions].MaxRows ([Sizer]).
	ChangeJob bool `json:"change_job,omitempty"`
	// Held says the connection's session holds the job after this pass
	// ([PassOptions].Hold): a slice goes on with it.
	Held bool `json:"held,omitempty"`
}

// Conflict reports whether the chunk rolled back with a conflict (CH409: a
// target that no longer matches its approval, an unsound job) or on a
// queue row whose job no chunk can run (22023), and the job was paused.
func (p *Pass) Conflict() bool {
	return p.Paused && p.Err != "" &&
		(p.SQLState == driver.ConflictCode || p.SQLState == pgerrcode.InvalidParameterValue)
}

// PausedByError reports whether the chunk rolled back with an error that
// is neither a conflict nor transient (a trigger's exception, a
// constraint, a privilege, a value out of range: see
// [TransientChunkError]), and the job was paused.
func (p *Pass) PausedByError() bool { return p.Paused && p.Err != "" && !p.Conflict() }

// Status lists every job of the schema with its fleet state and ETA,
// ordered by job id: [LoadOverview] at every job. It reads only. Through a chunks
// router it lists the jobs of every shard (asked at once), ordered by job
// id, then shard, each with its Shard; a shard that cannot be reached fails
// it with SQLSTATE 08006, naming the shard.
func Status(ctx context.Context, db driver.DB) ([]JobStatus, error) {
	ov, err := LoadOverview(ctx, db, "", 0)
	if err != nil {
		return nil, err
	}
	return ov.Jobs, nil
}

// Pause stops every worker from starting a chunk of the job until
// [Resume]. A chunk of it in flight finishes first (the call waits for it,
// up to 5 s), so when Pause returns, no chunk of the job runs or will start
// in the fleet (chunks drain and run are not stopped). It returns true when
// it paused the job, false when the job was already paused. An unknown or
// finished job is an [driver.ErrConflict]. A pending canary ([PauseAfter])
// is dropped: the job is paused now. With job's tenant it pauses only
// that tenant's job (a job of another tenant is an [driver.ErrConflict]),
// on one server and through a chunks router, which pauses it on the
// tenant's shard ([driver.JobRef]).
func Pause(ctx context.Context, db driver.DB, job driver.JobRef) (bool, error) {
	return jobCall(ctx, db, job, "pause_job")
}

// CheckPauseAfter checks a canary's n (1 to [MaxPauseAfter]) as
// [PauseAfter] does, before any connection.
func CheckPauseAfter(n int) error {
	if n < 1 || n > MaxPauseAfter {
		return driver.Invalidf("after: must be between 1 and %d chunks, got %d", MaxPauseAfter, n)
	}
	return nil
}

// PauseAfter is the canary: the fleet runs n (1 to [MaxPauseAfter]) more
// chunks of the job, then the pass that commits the n-th pauses the job in
// that same transaction, so chunk n+1 never starts before someone has
// looked ([driver.Report]) and called [Resume]. A paused or idle job is
// queued for those chunks (and the workers woken); a queued one keeps its
// place. A chunk of the job in flight finishes first (the call waits for
// it, up to 5 s) and is not counted. Only the fleet's passes count: chunks
// drain and run do not look at the queue. [Pause] and [Resume] drop a
// pending canary. It returns true when it changed the queue, false when the
// same canary was already pending. An unknown, finished or undone job, or n
// not below the chunks the job has left (it would finish instead of
// pausing), is an [driver.ErrConflict]. With job's tenant, as [Pause]:
// through a chunks router, the tenant's shard's workers count the chunks.
func PauseAfter(ctx context.Context, db driver.DB, job driver.JobRef, n int) (bool, error) {
	if err := CheckPauseAfter(n); err != nil {
		return false, err
	}
	return jobCall(ctx, db, job, "pause_job_after", n)
}

// MaxPauseAfter is the most chunks [PauseAfter] lets run: a job has at
// most 10,000 (a declared change's job of 10,000 targets at chunk size 1).
const MaxPauseAfter = driver.MaxChangeTargets

// Resume queues a paused job again, visible at once, and wakes the workers.
// An unfinished job with no queue row at all (state idle) is queued too,
// and a pending canary ([PauseAfter]) is dropped: the job runs to its end.
// It returns true when it changed the queue, false when the job was already
// queued with no canary. An unknown, finished or undone
// ([driver.JobRef.RegisterUndo]) job is an [driver.ErrConflict]. With
// job's tenant, as [Pause].
func Resume(ctx context.Context, db driver.DB, job driver.JobRef) (bool, error) {
	return jobCall(ctx, db, job, "resume_job")
}

// Abandoned is what [Abandon] answers (SQL abandon_job).
type Abandoned struct {
	JobID     string    `json:"job_id"`
	Abandoned bool      `json:"abandoned"` // false: it already was, and nothing changed
	By        string    `json:"by"`        // the session_user that abandoned it
	At        time.Time `json:"at"`
	Reason    string    `json:"reason"`
	NextIndex int       `json:"next_index"` // its committed targets, which stay
	Targets   int       `json:"targets"`
	// Proposal is set when the job is two-person: the abandon was proposed
	// instead of done (Abandoned false), and is done when another role
	// approves it ([driver.Approve] with its Digest).
	*Proposal
}

// Proposal is a skip or an abandon of a two-person job, proposed instead
// of done (docs/safety.md "Two people").
type Proposal struct {
	Proposed   bool      `json:"proposed,omitempty"` // always true
	Action     string    `json:"action,omitempty"`   // "skip" or "abandon"
	Digest     string    `json:"digest,omitempty"`   // what [driver.Approve] takes
	ProposedBy string    `json:"proposed_by,omitempty"`
	ProposedAt time.Time `json:"proposed_at,omitzero"`
}

// MaxReason is the longest reason an operator's decision records
// ([Abandon], [Skip], [SkipMismatched]), in characters.
const MaxReason = 500

// CheckAbandonReason checks an abandon's reason as the server does, before
// any connection.
func CheckAbandonReason(reason string) error { return checkReason(reason, "the job is abandoned") }

// checkReason checks a decision's reason as the server's check_reason
// does: what is what it says why of.
func checkReason(reason, what string) error {
	if strings.TrimSpace(reason) == "" {
		return driver.Invalidf("reason: must say why %s, got an empty text", what)
	}
	if n := utf8.RuneCountInString(reason); n > MaxReason {
		return driver.Invalidf("reason: at most %d characters, got %d", MaxReason, n)
	}
	return nil
}

// Abandon ends an unfinished job for good, for reason (recorded with who
// and when): it leaves the queue, no chunk of it runs again (run_chunk,
// [Resume] and [Pause] refuse it), and its committed chunks stay, with
// their audit, for report and undo. A campaign's job gives its place in the
// queue to the campaign's next job. A chunk of it in flight finishes first
// (the call waits up to 5 s). An unknown or finished job is an
// [driver.ErrConflict]; abandoning an abandoned job changes nothing.
func Abandon(ctx context.Context, db driver.DB, job driver.JobRef, reason string) (Abandoned, error) {
	if err := CheckAbandonReason(reason); err != nil {
		return Abandoned{}, err
	}
	if err := job.Validate(); err != nil {
		return Abandoned{}, err
	}
	var a Abandoned
	if _, err := driver.QueryJSON(ctx, db, &a, "abandon_job", job.Args(reason)...); err != nil {
		return Abandoned{}, err
	}
	return a, nil
}

// jobCall runs job function fn of job ([driver.JobRef.Call]), which
// answers whether it changed the queue.
func jobCall(ctx context.Context, db driver.DB, job driver.JobRef, fn string, args ...any) (bool, error) {
	sql, all, err := job.Call(fn, args...)
	if err != nil {
		return false, err
	}
	var changed bool
	if err := db.QueryRow(ctx, sql, all...).Scan(&changed); err != nil {
		return false, driver.MapError(err)
	}
	return changed, nil
}

// PassOptions are the settings of one worker pass ([RunNext]).
type PassOptions struct {
	// Rate is how long the job rests after its chunk (0: runnable at
	// once, behind every job already waiting); Retry, after a transient
	// error ([TransientChunkError]).
	Rate, Retry time.Duration
	// MaxRows (1 to 1,000; 0: none) caps a declared change's chunk below
	// its approved chunk size: the worker's adaptive size ([Sizer]); an
	// orders job's chunk is its chunk_size.
	MaxRows int
	// Hold keeps the job for conn's session after a chunk that leaves it
	// runnable ([Pass].Held), and SliceJob asks for that job again: a
	// slice (docs/fleet.md "Slices"). A pass without Hold, or the job's
	// end, pause, failure or invisibility, lets it go. "": the head of the
	// queue, skipping the jobs other sessions hold.
	Hold     bool
	SliceJob string
}

// RunNext is one worker pass (SQL run_next_chunk) in a transaction of its
// own on conn, in one round trip: BEGIN, the per-chunk bounds (SET LOCAL
// lock_timeout = '500ms', statement_timeout = '2000ms'), SELECT
// run_next_chunk and COMMIT. The server takes the next runnable job with
// SKIP LOCKED (or the slice's job), runs its next chunk and records in the
// queue what became of it, all in that one commit. After a chunk the job
// is runnable again after opts.Rate; after a transient error, after
// opts.Retry; after any other error of the chunk, it is paused. conn is
// borrowed as by [driver.RunChunk]: it must be idle, and it is left idle
// with its settings as they were (and, with Hold, the slice's lock).
//
// It returns nil when nothing was runnable. An error means the pass itself
// failed and nothing of it committed; what happened to a chunk is in
// [Pass]. A failed pass of a slice may leave the job held by conn's
// session: end the session, or pg_advisory_unlock_all.
func RunNext(ctx context.Context, conn *pgx.Conn, worker string, opts PassOptions) (*Pass, error) {
	if status := conn.PgConn().TxStatus(); status != 'I' {
		return nil, driver.Invalidf("conn: is inside a transaction (status %q); RunNext commits, so it needs an idle connection", status)
	}
	if opts.MaxRows < 0 || opts.MaxRows > driver.MaxChangeChunkSize {
		return nil, driver.Invalidf("max_rows: must be between 1 and %d (0: the approved chunk size), got %d", driver.MaxChangeChunkSize, opts.MaxRows)
	}
	rows := chunktx.Arg{OID: pgtype.Int4OID, Null: opts.MaxRows == 0}
	if opts.MaxRows > 0 {
		rows.Text = strconv.Itoa(opts.MaxRows)
	}
	slice := chunktx.Arg{Text: opts.SliceJob, OID: pgtype.TextOID, Null: opts.SliceJob == ""}
	body, err := chunktx.Call(ctx, conn.PgConn(), "select run_next_chunk($1, $2, $3, $4, $5, $6)::text",
		chunktx.Arg{Text: worker, OID: pgtype.TextOID},
		chunktx.Arg{Text: strconv.FormatInt(opts.Rate.Milliseconds(), 10), OID: pgtype.Int4OID},
		chunktx.Arg{Text: strconv.FormatInt(opts.Retry.Milliseconds(), 10), OID: pgtype.Int4OID}, rows, slice,
		chunktx.Arg{Text: strconv.FormatBool(opts.Hold), OID: pgtype.BoolOID})
	if err != nil {
		return nil, driver.MapError(err)
	}
	if body == nil {
		return nil, nil
	}
	p := &Pass{}
	if err := json.Unmarshal(body, p); err != nil {
		return nil, fmt.Errorf("run_next_chunk: committed, but its reply does not read: %w", err)
	}
	if p.Processed == nil {
		p.Processed = []driver.Key{}
	}
	return p, nil
}
