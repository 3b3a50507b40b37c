package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgxlisten"

	"github.com/chunks-dev/chunks/driver"
)

// Defaults and limits of a [Worker].
const (
	DefaultLease      = 5 * time.Second
	DefaultPoll       = time.Second
	DefaultRetryDelay = time.Second
	MaxConcurrency    = 64
	MinLease          = 100 * time.Millisecond
	MinPoll           = 10 * time.Millisecond
	MaxDuration       = 24 * time.Hour // of Lease, Poll and RetryDelay
	MaxRate           = 1000           // chunks per second per job
	MaxIDLen          = 200
)

// firstListenWait bounds how long Run waits for its first LISTEN before
// the passes start anyway.
const firstListenWait = 5 * time.Second

// releaseTimeout bounds the release of a lease (and the pause after a
// conflict) once the chunk is over, even when the worker is aborting.
const releaseTimeout = 5 * time.Second

// ErrAborted is what [Worker.Run] returns when its abort context ended:
// the chunks that were in flight were cancelled, so they rolled back.
var ErrAborted = errors.New("aborted: the chunks in flight were cancelled and rolled back")

// ErrNotInstalled is what [Worker.Run] returns when the connection's
// search_path has no chunks queue (run chunks migrate first).
var ErrNotInstalled = errors.New("no chunks queue on the search_path: run chunks migrate for this schema first")

// Worker runs jobs from the schema's queue, one chunk per pass. Set the
// fields, then call [Worker.Run]; a Worker runs once.
type Worker struct {
	// Pool is where every query goes; its connections' search_path must
	// reach the chunks schema. Each pass holds at most one connection at a
	// time, so MaxConns >= Concurrency keeps every pass busy. The LISTEN
	// connection is a separate one, opened with Pool's connection config.
	Pool *pgxpool.Pool
	// ID names this worker in the queue (leased_by) and in the log. Empty:
	// [DefaultID], hostname:pid.
	ID string
	// Concurrency is the number of passes at once, 1 to 64. Zero: 1.
	Concurrency int
	// Lease is how long a claim holds a job before another worker may take
	// it over (the killed worker's case). It should be longer than a chunk
	// (at most about 2.5 s: 500 ms of lock wait and 2 s per statement); a
	// shorter one is still safe, only wasteful. Zero: [DefaultLease].
	Lease time.Duration
	// Poll is how often an idle pass looks at the queue when no
	// notification woke it. Zero: [DefaultPoll].
	Poll time.Duration
	// Rate limits each job to that many chunks per second (0: no limit):
	// after a chunk, the job is not claimable for 1/Rate seconds.
	Rate float64
	// RetryDelay is how long a job rests after a chunk failed with an error
	// that is not a conflict (a lock timeout, a lost connection). Zero:
	// [DefaultRetryDelay].
	RetryDelay time.Duration
	// Logger receives the worker's log. Nil: text lines on stderr.
	Logger *slog.Logger

	chunks, jobsDone, conflicts, failures atomic.Int64
}

// Stats counts what a worker did.
type Stats struct {
	Chunks    int64 `json:"chunks"`    // chunks committed that cancelled orders
	JobsDone  int64 `json:"jobs_done"` // jobs this worker saw finish and removed from the queue
	Conflicts int64 `json:"conflicts"` // jobs paused after a conflict
	Failures  int64 `json:"failures"`  // chunks that failed with another error
}

// Stats is what the worker did so far.
func (w *Worker) Stats() Stats {
	return Stats{Chunks: w.chunks.Load(), JobsDone: w.jobsDone.Load(), Conflicts: w.conflicts.Load(), Failures: w.failures.Load()}
}

// DefaultID is hostname:pid.
func DefaultID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// runner is one Run: the worker's settings with the defaults applied.
type runner struct {
	w          *Worker
	pool       *pgxpool.Pool
	id         string
	passes     int
	lease      time.Duration
	poll       time.Duration
	rateDelay  time.Duration
	retryDelay time.Duration
	log        *slog.Logger
	wake       chan struct{} // one token: "look at the queue"
	claimLog   quiet
	listenLog  quiet
}

func (w *Worker) runner() (*runner, error) {
	r := &runner{w: w, pool: w.Pool, id: w.ID, passes: w.Concurrency, lease: w.Lease, poll: w.Poll,
		retryDelay: w.RetryDelay, log: w.Logger, wake: make(chan struct{}, 1)}
	if r.pool == nil {
		return nil, invalidf("pool: is nil")
	}
	if r.id == "" {
		r.id = DefaultID()
	}
	if len(r.id) > MaxIDLen || strings.IndexFunc(r.id, unicode.IsControl) >= 0 {
		return nil, invalidf("id: must be 1 to %d characters without control characters, got %q", MaxIDLen, r.id)
	}
	if r.passes == 0 {
		r.passes = 1
	}
	if r.passes < 1 || r.passes > MaxConcurrency {
		return nil, invalidf("concurrency: must be between 1 and %d, got %d", MaxConcurrency, r.passes)
	}
	for _, d := range []struct {
		name     string
		v        *time.Duration
		def, min time.Duration
	}{{"lease", &r.lease, DefaultLease, MinLease}, {"poll", &r.poll, DefaultPoll, MinPoll},
		{"retry_delay", &r.retryDelay, DefaultRetryDelay, time.Millisecond}} {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < d.min || *d.v > MaxDuration {
			return nil, invalidf("%s: must be between %s and %s, got %s", d.name, d.min, MaxDuration, *d.v)
		}
	}
	if math.IsNaN(w.Rate) || w.Rate < 0 || w.Rate > MaxRate {
		return nil, invalidf("rate: must be between 0 (no limit) and %d chunks per second per job, got %v", MaxRate, w.Rate)
	}
	if w.Rate > 0 {
		r.rateDelay = time.Duration(math.Ceil(float64(time.Second) / w.Rate))
	}
	if r.log == nil {
		r.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	r.log = r.log.With("worker", r.id)
	return r, nil
}

// Run runs passes until ctx ends, then lets the chunks in flight finish
// and returns nil: no new chunk starts after ctx ends. When abort ends
// (with ctx or after it), the chunks in flight are cancelled too (they roll back:
// nothing of them is committed), their leases are released, and Run returns
// [ErrAborted].
//
// Each pass claims the next visible job (SQL claim_job: SKIP LOCKED, a
// lease of Lease), runs ONE chunk with [driver.RunChunk] on a connection of
// Pool (no hooks), and releases the job with its receipt: removed when the
// job is done, else back at the end of the queue (after 1/Rate s when Rate
// is set). A conflict (an order that no longer matches its approval, an
// unsound job) is logged and the job is paused: an operator must look
// (chunks status, report), then resume it; other jobs go on. Any other
// error is logged and the job rests RetryDelay before it is claimable
// again; the worker itself never stops on a database error: it logs, waits
// and tries again, so a database restart costs only time.
//
// Idle passes wake on a notification (a dedicated LISTEN connection,
// reconnected when lost) and otherwise every Poll, so a lost notification
// only costs latency. Run does not migrate: it returns [ErrNotInstalled]
// at once when the queue is not on the search_path.
func (w *Worker) Run(ctx, abort context.Context) error {
	r, err := w.runner()
	if err != nil {
		return err
	}
	if abort == nil {
		abort = context.Background()
	}
	stop, cancelStop := context.WithCancel(ctx)
	defer cancelStop()
	unlink := context.AfterFunc(abort, cancelStop)
	defer unlink()

	var channel string
	if err := r.pool.QueryRow(abort, "select queue_channel()").Scan(&channel); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.UndefinedFunction {
			return fmt.Errorf("%w (%s)", ErrNotInstalled, pgErr.Message)
		}
		return fmt.Errorf("worker %s: %w", r.id, err)
	}

	var wg sync.WaitGroup
	started := make(chan bool, 1) // the first LISTEN attempt: true when it listens
	wg.Go(func() { r.listen(stop, channel, started) })
	listening := false
	select { // the first LISTEN attempt, bounded: polling works without it
	case listening = <-started:
	case <-stop.Done():
	case <-time.After(firstListenWait):
	}
	for range r.passes {
		wg.Go(func() { r.pass(stop, abort) })
	}
	if stop.Err() == nil {
		rate := "none"
		if w.Rate > 0 {
			rate = fmt.Sprintf("%v chunks/s per job", w.Rate)
		}
		r.log.Info("ready", "concurrency", r.passes, "lease", r.lease, "poll", r.poll, "rate", rate,
			"channel", channel, "listening", listening)
	}
	<-stop.Done()
	if abort.Err() == nil {
		r.log.Info("stopping: no new chunk starts; waiting for the chunks in flight")
	}
	wg.Wait()
	st := w.Stats()
	if abort.Err() != nil {
		r.log.Warn("aborted", "chunks", st.Chunks, "jobs_done", st.JobsDone)
		return ErrAborted
	}
	r.log.Info("stopped", "chunks", st.Chunks, "jobs_done", st.JobsDone, "conflicts", st.Conflicts, "failures", st.Failures)
	return nil
}

// wakeOne lets one idle pass look at the queue now.
func (r *runner) wakeOne() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// listen wakes a pass on every notification of channel, on a dedicated
// connection that pgxlisten reconnects when it is lost. It reports the
// first attempt's outcome on started.
func (r *runner) listen(stop context.Context, channel string, started chan<- bool) {
	var once sync.Once
	report := func(ok bool) { once.Do(func() { started <- ok }) }
	l := &pgxlisten.Listener{
		Connect: func(ctx context.Context) (*pgx.Conn, error) {
			return pgx.ConnectConfig(ctx, r.pool.Config().ConnConfig.Copy())
		},
		LogError: func(ctx context.Context, err error) {
			if ctx.Err() != nil {
				return // stopping
			}
			report(false)
			if r.listenLog.first(err) {
				r.log.Warn("listen: lost or refused; polling only until it is back", "channel", channel,
					"every", r.poll, "error", err)
			}
		},
		ReconnectDelay: min(r.poll, time.Second),
	}
	l.Handle(channel, &wakeHandler{r: r, onListen: func() {
		report(true)
		r.listenLog.ok()
		r.log.Info("listening", "channel", channel)
	}})
	if err := l.Listen(stop); err != nil && stop.Err() == nil {
		r.log.Error("listen stopped", "error", err)
	}
	report(false)
}

// wakeHandler is the pgxlisten handler: a notification wakes a pass; so does
// every (re)start of listening, since notifications sent while the
// connection was down are lost.
type wakeHandler struct {
	r        *runner
	onListen func()
}

// HandleNotification wakes one idle pass.
func (h *wakeHandler) HandleNotification(context.Context, *pgconn.Notification, *pgx.Conn) error {
	h.r.wakeOne()
	return nil
}

// HandleBacklog runs when listening (re)starts: it wakes a pass, since
// notifications sent while the connection was down are lost.
func (h *wakeHandler) HandleBacklog(context.Context, string, *pgx.Conn) error {
	h.onListen()
	h.r.wakeOne()
	return nil
}

// pass claims and runs one chunk after another until stop ends.
func (r *runner) pass(stop, abort context.Context) {
	for stop.Err() == nil {
		claimed, err := r.once(stop, abort)
		if claimed {
			continue
		}
		wait := r.poll
		if err != nil {
			wait = min(r.poll, r.retryDelay)
		}
		timer := time.NewTimer(wait)
		select {
		case <-stop.Done():
		case <-r.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// once claims a job and, when there is one, runs one chunk of it and
// releases it. It says whether it claimed a job.
func (r *runner) once(stop, abort context.Context) (bool, error) {
	c, err := ClaimJob(abort, r.pool, r.id, r.lease)
	if err != nil {
		if abort.Err() == nil && r.claimLog.first(err) {
			r.log.Error("claim failed; retrying", "error", err)
		}
		return false, err
	}
	r.claimLog.ok()
	if c == nil {
		return false, nil
	}
	if stop.Err() != nil { // stopped while claiming: give the job straight back
		r.release(abort, *c, false, 0)
		return false, nil
	}
	r.wakeOne() // there may be more: let another idle pass look
	r.chunk(abort, *c)
	return true, nil
}

// chunk runs one chunk of the claimed job and releases it.
func (r *runner) chunk(abort context.Context, c Claim) {
	log := r.log.With("job", c.JobID)
	started := time.Now()
	res, err := r.runChunk(abort, c.JobID)
	switch {
	case err == nil:
		if len(res.Processed) > 0 {
			r.w.chunks.Add(1)
			log.Debug("chunk committed", "ids", len(res.Processed), "next_index", res.NextIndex,
				"took", time.Since(started).Round(time.Millisecond))
		}
		if res.Done {
			if r.release(abort, c, true, 0) {
				r.w.jobsDone.Add(1)
				log.Info("job done", "next_index", res.NextIndex)
			}
			return
		}
		if r.release(abort, c, false, r.rateDelay) && r.rateDelay > 0 {
			time.AfterFunc(r.rateDelay, r.wakeOne) // it is claimable again then
		}
	case abort.Err() != nil:
		log.Warn("chunk cancelled (rolled back)", "error", err)
		r.release(abort, c, false, 0)
	case errors.Is(err, driver.ErrConflict):
		r.w.conflicts.Add(1)
		log.Error("conflict: pausing the job; fix the cause (chunks report), then chunks resume it", "error", err)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(abort), releaseTimeout)
		if _, perr := Pause(ctx, r.pool, c.JobID); perr != nil {
			log.Error("pause failed", "error", perr)
		}
		cancel()
		r.release(abort, c, false, 0)
	default:
		r.w.failures.Add(1)
		delay := max(r.retryDelay, r.rateDelay)
		log.Error("chunk failed; the job rests, then any worker retries it", "error", err, "rest", delay)
		r.release(abort, c, false, delay)
	}
}

// runChunk is driver.RunChunk on a connection of the pool.
func (r *runner) runChunk(ctx context.Context, jobID string) (driver.ChunkResult, error) {
	conn, err := r.pool.Acquire(ctx)
	if err != nil {
		return driver.ChunkResult{}, err
	}
	defer conn.Release() // a connection that RunChunk had to close is dropped by the pool
	return driver.RunChunk(ctx, conn.Conn(), jobID, nil)
}

// release ends the lease c, even when the worker is aborting, and says
// whether it did.
func (r *runner) release(abort context.Context, c Claim, done bool, delay time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(abort), releaseTimeout)
	defer cancel()
	ok, err := ReleaseJob(ctx, r.pool, c, done, delay)
	switch {
	case err != nil:
		r.log.Error("release failed; the job is claimable again when the lease ends", "job", c.JobID, "error", err,
			"lease", r.lease)
	case !ok:
		r.log.Warn("lease lost: it ran out and another worker took the job over", "job", c.JobID, "receipt", c.Receipt)
	}
	return ok
}

// quiet logs a repeating error once, until the next success.
type quiet struct {
	mu   sync.Mutex
	last string
}

func (q *quiet) first(err error) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	msg := err.Error()
	if msg == q.last {
		return false
	}
	q.last = msg
	return true
}

func (q *quiet) ok() {
	q.mu.Lock()
	q.last = ""
	q.mu.Unlock()
}
