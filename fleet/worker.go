package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgxlisten"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/pace"
)

// Defaults and limits of a [Worker].
const (
	DefaultPoll        = time.Second
	DefaultRetryDelay  = time.Second
	MaxConcurrency     = 64
	MinPoll            = 10 * time.Millisecond
	MaxDuration        = 24 * time.Hour         // of Poll, RetryDelay and the delay 1/Rate
	MaxRate            = 1000                   // chunks per second per job
	MinRate            = 1.0 / 86400            // one chunk a day: the queue stores delays of up to a day
	MaxIDLen           = 63                     // bytes of application_name that PostgreSQL keeps
	DefaultSlice       = 100 * time.Millisecond // a slice's time ([Worker].Slice)
	DefaultSliceChunks = 10                     // a slice's chunks ([Worker].SliceChunks)
	MaxSliceChunks     = 1000                   // the most chunks of a slice
)

// Worker runs jobs from the schema's queue, one chunk per pass. Set the
// fields, then call [Worker.Start], and [Worker.Stop] or
// [Worker.StopAndCancel] to end it; a Worker starts once. [Worker.Validate]
// checks the fields without starting.
type Worker struct {
	// Pool is where every query goes; its connections' search_path must
	// reach the chunks schema. Each pass holds one connection for one round
	// trip, so MaxConns >= Concurrency keeps every pass busy. The LISTEN
	// connection and the heartbeat's (which holds the worker's id on the
	// server) are separate ones, opened with Pool's connection config.
	// Give its connections application_name = ID, and chunks status shows
	// which worker runs a chunk. A pass sends COMMIT with its chunk, so for
	// [Worker.StopAndCancel] to roll the chunks in flight back, give them a
	// [pgconn.CancelRequestContextWatcherHandler] (chunks worker does): pgx's
	// default only closes the connection, and the server then commits.
	Pool *pgxpool.Pool
	// ID names this worker in the queue (paused_by, after a conflict), in
	// the log and in the worker list: 1 to 63 printable ASCII characters,
	// all that PostgreSQL keeps of an application_name, so the session a
	// chunk runs in names the same worker (see [CheckID]). While the worker
	// runs, no other worker can run with its ID on the same server: Start
	// refuses it. Empty: [DefaultID], hostname:pid.
	ID string
	// Concurrency is the number of passes at once, 1 to 64. Zero: 1.
	Concurrency int
	// Poll is how often an idle pass looks at the queue when no
	// notification woke it. Zero: [DefaultPoll].
	Poll time.Duration
	// Rate limits each job to that many chunks per second, from [MinRate]
	// (one a day) to [MaxRate] (0: no limit): after a chunk, the job rests
	// 1/Rate seconds.
	Rate float64
	// RetryDelay is how long a job rests after its chunk failed with a
	// transient error ([TransientChunkError]: a lock wait over 500 ms, a
	// statement timeout, a deadlock...). Any other error of a chunk pauses
	// its job instead. Zero: [DefaultRetryDelay].
	RetryDelay time.Duration
	// Logger receives the worker's log. Nil: text lines on stderr.
	Logger *slog.Logger
	// Pace holds new chunks back while a standby is too far behind or the
	// operator's throttle query says so (package pace). Zero: never.
	Pace pace.Config
	// Observer, when not nil, is told of every pass (for metrics).
	Observer Observer
	// Slice and SliceChunks bound a slice (docs/fleet.md "Slices"): a
	// worker that took a job runs up to SliceChunks of its chunks back to
	// back, for up to Slice (a slice ends within one chunk of it), before
	// the job goes behind every waiting job. The claim is the session's:
	// a dead worker's job is free at once. Zero: [DefaultSlice] and
	// [DefaultSliceChunks]; SliceChunks 1: no slices.
	Slice       time.Duration
	SliceChunks int
	// ChunkTime is the target time of one chunk of a declared change: a
	// longer chunk makes the next ones smaller, in proportion, and they grow
	// back while chunks are quicker and the pacer does not hold them
	// ([Sizer]). Zero: [DefaultChunkTime].
	ChunkTime time.Duration

	chunks, jobsDone, conflicts, errorPauses, failures atomic.Int64
	lastChunk                                          atomic.Int64 // unix nanoseconds of the last committed chunk
	pacer                                              atomic.Pointer[pace.Pacer]
	sizer                                              atomic.Pointer[Sizer]
	progress                                           progress
	mu                                                 sync.Mutex
	life                                               *life // Start, Stop and StopAndCancel; nil until the first of them
}

// Observer hears what a [Worker]'s passes do, e.g. to count it as metrics.
// Its methods are called from the passes as they end, concurrently, so
// they must be safe for concurrent use and quick.
type Observer interface {
	// Ran is told of each pass that took a job: p is what became of it
	// (see [Pass]), took how long the pass took, its round trip included.
	Ran(p *Pass, took time.Duration)
	// Failed is told of each pass that failed as a whole: nothing of it
	// committed (the connection was lost, the server restarts...).
	Failed(err error)
}

// Pacing is the worker's last pacing decision (package pace): whether it
// holds new chunks, and why. The zero State before [Worker.Start].
func (w *Worker) Pacing() pace.State {
	if p := w.pacer.Load(); p != nil {
		return p.State()
	}
	return pace.State{}
}

// ChunkRows is the worker's adaptive cap on a declared change's chunk
// ([Sizer]): 0 when there is none (each job's approved chunk size), and
// before [Worker.Start].
func (w *Worker) ChunkRows() int {
	if s := w.sizer.Load(); s != nil {
		return s.Rows()
	}
	return 0
}

// Stats counts what a worker did.
type Stats struct {
	Chunks    int64 `json:"chunks"`    // chunks committed that cancelled orders
	JobsDone  int64 `json:"jobs_done"` // jobs whose last chunk this worker committed
	Conflicts int64 `json:"conflicts"` // jobs paused after a conflict ([Pass.Conflict])
	// ErrorPauses counts the jobs paused after an error that is neither a
	// conflict nor transient ([Pass.PausedByError]).
	ErrorPauses int64 `json:"error_pauses"`
	Failures    int64 `json:"failures"` // chunks that failed with a transient error (the job rested)
}

// Stats is what the worker did so far.
func (w *Worker) Stats() Stats {
	return Stats{Chunks: w.chunks.Load(), JobsDone: w.jobsDone.Load(), Conflicts: w.conflicts.Load(),
		ErrorPauses: w.errorPauses.Load(), Failures: w.failures.Load()}
}

// DefaultID is hostname:pid, the host name cut so that it fits in
// [MaxIDLen] ("localhost" when it is not printable ASCII).
func DefaultID() string {
	pid := fmt.Sprintf(":%d", os.Getpid())
	host, err := os.Hostname()
	if err != nil || host == "" || CheckID("id", host) != nil {
		host = "localhost"
	}
	return host[:min(len(host), MaxIDLen-len(pid))] + pid
}

// CheckID refuses a worker id that application_name would not keep as it
// is: anything but 1 to [MaxIDLen] printable ASCII characters (PostgreSQL
// cuts an application_name at 63 bytes and turns every other character
// into ?). The error is an [driver.ErrInvalid] that names the field as
// field (the CLI's "--id").
func CheckID(field, id string) error {
	if len(id) < 1 || len(id) > MaxIDLen || strings.IndexFunc(id, func(r rune) bool { return r < ' ' || r > '~' }) >= 0 {
		return driver.Invalidf("%s: must be 1 to %d printable ASCII characters (all that application_name keeps), got %s",
			field, MaxIDLen, driver.Excerpt(id, true))
	}
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
			if repeats, ok := r.listenLog.first(err); ok {
				r.logFault("listen: lost or refused; polling only until it is back", err, repeats,
					"channel", channel, "poll_ms", r.poll.Milliseconds())
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

// pass runs one chunk after another until stop ends, and waits for a
// wakeup or the poll interval whenever nothing was runnable.
func (r *runner) pass(stop, abort context.Context) {
	for stop.Err() == nil {
		held := false
		if r.pacer.Wait(stop, func(pace.State) { held = true }) != nil {
			return // stopped while throttled
		}
		if held {
			r.sizer.Held() // the database is under pressure: smaller chunks
			r.log.Info("held by the pacer: smaller chunks of declared changes", "max_rows", r.sizer.Rows())
		}
		ran, err := r.onePass(stop, abort)
		if ran {
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

// onePass runs one slice (docs/fleet.md "Slices"): a pass that takes the
// head of the queue and, while the job stays runnable, up to SliceChunks-1
// more of its chunks back to back on the same connection, for up to
// Slice; each pass waits for the pacer first, so pause, rate and pacing
// take effect at the next chunk. It logs what became of each pass and
// says whether a job was runnable.
func (r *runner) onePass(stop, abort context.Context) (bool, error) {
	conn, err := r.pool.Acquire(abort)
	if err != nil {
		return r.passDone(abort, nil, err, time.Now())
	}
	defer conn.Release() // a connection that RunNext had to close is dropped by the pool
	sliceStart := time.Now()
	opts := PassOptions{Rate: r.rateDelay, Retry: r.retryDelay, MaxRows: r.sizer.Rows(), Hold: r.sliceChunks > 1}
	p, err := r.runNext(abort, conn, opts)
	ran, err := r.passDone(abort, p, err, sliceStart)
	for n := 1; err == nil && p != nil && p.Held; n++ {
		last := time.Since(sliceStart) / time.Duration(n)
		held := false
		if r.pacer.Wait(stop, func(pace.State) { held = true }) != nil {
			r.letGo(conn, p.JobID) // stopped while throttled
			return true, nil
		}
		if held {
			r.sizer.Held()
			r.log.Info("held by the pacer: smaller chunks of declared changes", "max_rows", r.sizer.Rows())
		}
		opts.SliceJob, opts.MaxRows = p.JobID, r.sizer.Rows()
		opts.Hold = n+1 < r.sliceChunks && time.Since(sliceStart)+last < r.slice && stop.Err() == nil
		started := time.Now()
		p, err = r.runNext(abort, conn, opts)
		if err != nil {
			r.letGo(conn, opts.SliceJob)
		}
		if _, err = r.passDone(abort, p, err, started); p == nil && err == nil {
			ran = true // the slice's job is not runnable any more: the queue's head next, at once
		}
	}
	return ran, err
}

// letGo ends a slice that its last pass did not end (the worker stops,
// or the pass failed): the connection's session lets every job go, or,
// if it cannot say so, is closed (which lets them go too).
func (r *runner) letGo(conn *pgxpool.Conn, job string) {
	ctx, cancel := context.WithTimeout(context.Background(), heartbeatEvery)
	defer cancel()
	if _, err := conn.Exec(ctx, "select pg_advisory_unlock_all()"); err != nil {
		r.log.Warn("could not let the slice's job go: closing the connection, which does", "job", job, "error", err)
		if cerr := conn.Conn().Close(ctx); cerr != nil {
			r.log.Warn("closing the connection", "error", cerr)
		}
	}
}

// passDone logs what became of one pass that started at started, counts
// it, and says whether a job was runnable.
func (r *runner) passDone(abort context.Context, p *Pass, err error, started time.Time) (bool, error) {
	if obs := r.w.Observer; obs != nil {
		if err != nil {
			obs.Failed(err)
		} else if p != nil {
			obs.Ran(p, time.Since(started))
		}
	}
	if err != nil {
		if abort.Err() != nil {
			r.log.Warn("pass cancelled: its chunk rolled back", "error", err)
		} else if repeats, ok := r.passLog.first(err); ok {
			r.logFault("pass failed: nothing of it committed; retrying", err, repeats,
				"retry_in_ms", min(r.poll, r.retryDelay).Milliseconds())
		}
		return false, err
	}
	r.passLog.ok()
	if p == nil {
		return false, nil
	}
	r.wakeOne() // there may be more: let another idle pass look
	log := r.log.With("job", p.JobID)
	took := time.Since(started).Milliseconds()
	switch {
	case p.Conflict():
		r.w.conflicts.Add(1)
		log.Error("conflict: the job is paused; fix the cause (chunks report), then chunks resume it",
			"sqlstate", p.SQLState, "error", p.Err)
	case p.PausedByError():
		r.w.errorPauses.Add(1)
		log.Error("chunk failed with an error that retrying does not fix; it rolled back and the job is paused: "+
			"fix the cause (chunks status shows the reason), then chunks resume it",
			"sqlstate", p.SQLState, "error", p.Err)
	case p.Err != "":
		r.w.failures.Add(1)
		log.Error("chunk failed with a transient error and rolled back; the job rests, then any worker retries it",
			"sqlstate", p.SQLState, "error", p.Err, "rest_ms", p.RestMs)
		time.AfterFunc(time.Duration(p.RestMs)*time.Millisecond, r.wakeOne)
	case len(p.Processed) == 0:
		log.Info("job already done; removed from the queue", "next_index", p.NextIndex)
	default:
		r.w.chunks.Add(1)
		now := time.Now()
		r.w.lastChunk.Store(now.UnixNano())
		r.w.progress.add(p.JobID, p.NextIndex, now)
		r.pacer.Committed()
		if p.ChangeJob {
			before, after := r.sizer.Rows(), r.sizer.Ran(len(p.Processed), time.Since(started))
			switch {
			case after != 0 && (before == 0 || after < before):
				log.Info("chunk took longer than --chunk-time: smaller chunks", "rows", len(p.Processed), "took_ms", took, "max_rows", after)
			case after != before:
				log.Debug("chunks grow back", "max_rows", after)
			}
		}
		log.Debug("chunk committed", "ids", len(p.Processed), "next_index", p.NextIndex, "done", p.Done, "took_ms", took)
		switch {
		case p.Done:
			r.w.jobsDone.Add(1)
			log.Info("job done", "next_index", p.NextIndex)
		case p.Paused:
			log.Info("canary done: the job is paused after the chunks pause --after allowed; look (chunks report), then chunks resume it",
				"next_index", p.NextIndex)
		case r.rateDelay > 0:
			time.AfterFunc(r.rateDelay, r.wakeOne) // it is runnable again then
		}
	}
	return true, nil
}

// runNext is [RunNext] on conn, a connection of the pool.
func (r *runner) runNext(ctx context.Context, conn *pgxpool.Conn, opts PassOptions) (*Pass, error) {
	p, err := RunNext(ctx, conn.Conn(), r.id, opts)
	return p, driver.ExplainMissing(ctx, conn.Conn(), err, driver.Operator) // access revoked while it runs
}

// logFault logs an error of a pass or of the LISTEN connection with what
// [Classify] makes of it: a transient one as a warning, a permanent one as an
// error that says it will not go away by itself. repeats is how many times
// the same error came since it was last logged.
func (r *runner) logFault(msg string, err error, repeats int, args ...any) {
	transient, reason := Classify(err)
	args = append(args, "reason", reason, "error", err)
	if repeats > 0 {
		args = append(args, "repeats", repeats)
	}
	if transient {
		r.log.Warn(msg, args...)
		return
	}
	r.log.Error(msg+"; this error does not go away by itself: fix its cause (the worker keeps retrying and logs it again every "+
		quietRepeat.String()+")", args...)
}

// quietRepeat is how often [quiet] logs an error again that keeps coming.
const quietRepeat = time.Minute

// quiet logs a repeating error once, until the next success, and again
// every quietRepeat while it keeps coming.
type quiet struct {
	every   time.Duration // how often to log the same error again; 0: quietRepeat
	mu      sync.Mutex
	last    string
	logged  time.Time // when last was logged
	repeats int       // how often last came since
}

// first says whether to log err now, and how often it came since it was
// last logged.
func (q *quiet) first(err error) (repeats int, log bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	every := q.every
	if every == 0 {
		every = quietRepeat
	}
	msg := err.Error()
	if msg == q.last && time.Since(q.logged) < every {
		q.repeats++
		return 0, false
	}
	if msg == q.last {
		repeats = q.repeats
	}
	q.last, q.logged, q.repeats = msg, time.Now(), 0
	return repeats, true
}

func (q *quiet) ok() {
	q.mu.Lock()
	q.last, q.repeats = "", 0
	q.mu.Unlock()
}
