// Package pace holds back new chunks while the database's health says so:
// a streaming standby too far behind in replay (--max-replica-lag), or the
// operator's own signal (--throttle-query). chunks worker asks before each
// pass and chunks drain before each call. Throttling is waiting, never
// failing: a [Pacer] only ever makes its caller wait.
//
// # How replica lag is measured
//
// From the primary, with one query at most every CheckInterval (and far
// fewer while every standby is far below the limit: [skipUntil]) and no
// connection to any standby: pg_current_wal_insert_lsn() (which, unlike
// the write position, includes a commit that synchronous_commit = off has
// not flushed yet) and, per standby in
// pg_stat_replication, its replay_lsn. A standby is behind when it has not
// replayed WAL the primary has written, by the age of the oldest such WAL
// (the pacer keeps the positions it read, with their times):
//
//   - a standby that has replayed everything up to the primary's current
//     position is not behind, whatever pg_stat_replication.replay_lag still
//     shows (it keeps its last value for a while after the standby caught
//     up);
//   - a standby that has received WAL but not applied it is behind.
//
// The pacer also times how long each standby takes to replay this
// process's own chunks: the chunk's commit position against the standby's
// replay position in the readings that follow. A standby that took longer
// than the maximum for the last chunk it replayed is slow, and after each
// chunk it is held for until it has replayed that chunk. That keeps a
// standby that applies WAL 2 s late (recovery_min_apply_delay) to about
// one chunk per 2 s, instead of a burst of chunks until the age of the
// oldest unreplayed WAL passes the maximum; replay_lag alone cannot show
// it, since such a standby replays everything but the commit record at
// once. Until a standby has been timed, the first chunk waits for its
// replay (a fraction of a second on a healthy standby; not reported as
// throttling), and a standby that shows a replay_lag over the maximum
// counts as slow from the start.
//
// # Who waits on the database
//
// Only the refresher, one goroutine per [Pacer]. It reads the signals
// when a [Pacer.Wait] asks and at most every CheckInterval, each reading
// in one READ ONLY transaction with a timeout, and publishes an immutable
// snapshot. Everything that decides (judge, behind, calibrating, observe)
// is a pure function of a snapshot and the time, tested on a fake clock.
package pace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults and limits of a [Config].
const (
	DefaultCheckInterval = 100 * time.Millisecond
	MinCheckInterval     = 10 * time.Millisecond
	MaxCheckInterval     = time.Minute
	MaxReplicaLag        = 24 * time.Hour
	MaxThrottleQueryLen  = 10000
)

// Config says what holds new chunks back. The zero value holds nothing.
type Config struct {
	// MaxReplicaLag holds new chunks while any standby streaming from the
	// server is more than this behind in replay. 0: off. It needs the role
	// to see pg_stat_replication in full: pg_monitor (or
	// pg_read_all_stats).
	MaxReplicaLag time.Duration
	// ThrottleQuery is the operator's own signal: a query that returns one
	// boolean; true holds new chunks. It runs in a READ ONLY transaction.
	// A query that fails holds too, and the failure is logged. "": off.
	ThrottleQuery string
	// CheckInterval is how often the signals are read at most. 0:
	// [DefaultCheckInterval].
	CheckInterval time.Duration
}

// Validate checks the configuration, naming the field that is wrong.
func (c Config) Validate() error {
	if c.MaxReplicaLag < 0 || c.MaxReplicaLag > MaxReplicaLag {
		return fmt.Errorf("max_replica_lag: must be between 0 (off) and %v, got %v", MaxReplicaLag, c.MaxReplicaLag)
	}
	if c.CheckInterval != 0 && (c.CheckInterval < MinCheckInterval || c.CheckInterval > MaxCheckInterval) {
		return fmt.Errorf("check_interval: must be between %v and %v (0: %v), got %v", MinCheckInterval, MaxCheckInterval,
			DefaultCheckInterval, c.CheckInterval)
	}
	if len(c.ThrottleQuery) > MaxThrottleQueryLen {
		return fmt.Errorf("throttle_query: must be at most %d bytes, got %d", MaxThrottleQueryLen, len(c.ThrottleQuery))
	}
	if c.ThrottleQuery != "" && strings.TrimSpace(c.ThrottleQuery) == "" {
		return errors.New("throttle_query: is blank")
	}
	return nil
}

// Off reports whether nothing is configured: Wait never holds.
func (c Config) Off() bool { return c.MaxReplicaLag == 0 && c.ThrottleQuery == "" }

// The causes of throttling in [State]: a short, fixed name for each kind of
// reason (a metric's label: the reason itself holds figures).
const (
	CauseReplicaLag    = "replica_lag"    // a standby is more than MaxReplicaLag behind
	CauseThrottleQuery = "throttle_query" // the throttle query returned true
	CauseCheckFailed   = "check_failed"   // the lag check or the throttle query failed
)

// Causes lists every cause a [State] can name.
var Causes = []string{CauseReplicaLag, CauseThrottleQuery, CauseCheckFailed}

// State is the pacer's last decision.
type State struct {
	Throttled bool
	Reason    string        // why, when throttled: e.g. "replica standby1 is 2.1 s behind (max 500ms)"
	Cause     string        // the kind of reason, when throttled: one of [Causes]
	Lag       time.Duration // the largest replica lag last measured (0 without standbys or when off)

	calibrating bool // waiting for a standby's first replay of a chunk of ours: a hold, but not throttling
}

// Pacer decides, before each chunk, whether it may start. It is safe for
// concurrent use by the passes of one worker.
//
// One goroutine of its own (the refresher, started by the first [Pacer.Wait]
// and ended by [Pacer.Close]) reads the signals, each reading with a
// timeout ([Pacer.ReadTimeout]); it publishes what it read as an immutable
// snapshot. Wait, State and Committed never touch the database, so a slow
// or stuck throttle query holds new chunks (a reading that times out is a
// failed reading, and a failed reading holds) but never the heartbeat that
// reports the hold.
type Pacer struct {
	cfg     Config
	pool    *pgxpool.Pool
	log     *slog.Logger
	timeout time.Duration

	snap  atomic.Pointer[snapshot] // the last reading's snapshot
	state atomic.Pointer[State]    // the last decision
	since atomic.Int64             // unix nanoseconds: when the current throttling started

	mu     sync.Mutex  // guards unread only; never held across I/O
	unread []time.Time // chunks committed since the last reading began

	wake    chan struct{} // asks the refresher for a reading
	started sync.Once
	stop    context.CancelFunc
	done    chan struct{} // closed when the refresher has returned
}

// New returns a pacer that reads the signals on pool and logs throttling
// on log. A zero cfg makes a pacer that never holds and never queries.
// Close it when done.
func New(cfg Config, pool *pgxpool.Pool, log *slog.Logger) (*Pacer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.CheckInterval == 0 {
		cfg.CheckInterval = DefaultCheckInterval
	}
	if log == nil {
		log = slog.Default()
	}
	p := &Pacer{cfg: cfg, pool: pool, log: log, timeout: max(cfg.CheckInterval, MinReadTimeout),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	p.snap.Store(&snapshot{replaced: make(chan struct{})})
	p.state.Store(&State{})
	return p, nil
}

// MinReadTimeout is the shortest timeout of a reading of the signals: a
// check interval of 100 ms must not fail a throttle query of 150 ms.
const MinReadTimeout = time.Second

// ReadTimeout is how long one reading of the signals may take: the check
// interval, at least [MinReadTimeout]. A reading that takes longer is
// cancelled (statement_timeout on its transaction), logged, and holds new
// chunks like any failed reading, until a reading succeeds.
func (p *Pacer) ReadTimeout() time.Duration { return p.timeout }

// State is the last decision; a nil pacer never throttles. It never waits.
func (p *Pacer) State() State {
	if p == nil {
		return State{}
	}
	return *p.state.Load()
}

// Committed tells the pacer that a chunk of this process just committed.
// It never waits.
func (p *Pacer) Committed() {
	if p.cfg.Off() {
		return
	}
	p.mu.Lock()
	if len(p.unread) < maxKept {
		p.unread = append(p.unread, time.Now())
	}
	p.mu.Unlock()
}

// Wait returns when a new chunk may start, or with ctx's error when ctx
// ends first (at once, even while a reading is in flight). It decides on a
// reading at most CheckInterval old, or older while the lag check's skip
// rule says a new one could not throttle ([skipUntil]: the last reading
// found every standby far below the limit, and its lag cannot have grown
// past half the limit since); on an older one it asks the refresher for a
// new reading and waits for it. It asks for the next reading one
// CheckInterval before the skip ends, without waiting for it. While it
// holds, it asks for a reading at each CheckInterval and decides again
// after each, and it logs once when throttling starts and once when it
// ends, with the time spent. onHold, when not nil, is called with the
// state each time Wait decides to hold (for a progress bar or a heartbeat).
//
// Wait decides before a chunk; it does not fence it. Once a reading that
// holds (a failed one, say) is published, no Wait returns until a reading
// lets chunks go again; but a chunk whose Wait returned a moment before,
// on the reading before, may still start after it: at most one per caller
// (a worker's pass), which waits again before its next chunk.
func (p *Pacer) Wait(ctx context.Context, onHold func(State)) error {
	if p.cfg.Off() {
		return ctx.Err()
	}
	p.started.Do(p.start)
	for {
		s := p.snap.Load()
		now := time.Now()
		if s.read.IsZero() || !now.Before(p.until(s)) {
			p.ask()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-s.replaced:
			}
			continue
		}
		if !now.Before(p.until(s).Add(-p.cfg.CheckInterval)) {
			p.ask() // the next reading, read while the chunk runs
		}
		st := judge(p.cfg, s, p.unreadCommits(), now)
		p.decided(ctx, st)
		if !st.Throttled && !st.calibrating {
			return ctx.Err()
		}
		if onHold != nil && st.Throttled {
			onHold(st)
		}
		p.ask() // a hold decides again on a new reading
		timer := time.NewTimer(p.cfg.CheckInterval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-s.replaced:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// until is until when Wait decides on s without a new reading.
func (p *Pacer) until(s *snapshot) time.Time {
	if s.until.IsZero() {
		return s.read.Add(p.cfg.CheckInterval)
	}
	return s.until
}

// ask asks the refresher for a reading, without waiting: it reads at most
// every CheckInterval.
func (p *Pacer) ask() {
	select {
	case p.wake <- struct{}{}:
	default: // a reading is asked for already
	}
}

// Close stops the refresher, cancelling a reading in flight, and returns
// when it has stopped. A nil pacer, or one never waited on, has nothing to
// stop.
func (p *Pacer) Close() {
	if p == nil {
		return
	}
	p.started.Do(func() { close(p.done) }) // never started: nothing to stop
	if p.stop != nil {
		p.stop()
	}
	<-p.done
}

// unreadCommits is a copy of the chunks committed since the last reading
// began.
func (p *Pacer) unreadCommits() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.unread)
}

// decided records st as the last decision and logs when throttling starts,
// ends or changes its reason.
func (p *Pacer) decided(ctx context.Context, st State) {
	was := *p.state.Swap(&st)
	switch {
	case st.Throttled && !was.Throttled:
		p.since.Store(time.Now().UnixNano())
		level := slog.LevelInfo
		if st.Cause == CauseCheckFailed {
			level = slog.LevelError // a signal that cannot be read holds: say it loudly
		}
		p.log.Log(ctx, level, "throttling: holding new chunks", "reason", st.Reason)
	case !st.Throttled && was.Throttled:
		p.log.Info("throttling ended", "held_ms", time.Since(time.Unix(0, p.since.Load())).Milliseconds(), "was", was.Reason)
	case st.Throttled && reasonKind(st.Reason) != reasonKind(was.Reason):
		p.log.Info("throttling: still holding, for another reason", "reason", st.Reason)
	}
}

// reasonKind is the reason without its figures, so that a lag that grows
// is not logged as a new reason.
func reasonKind(reason string) string {
	kind, _, _ := strings.Cut(reason, " is ")
	kind, _, _ = strings.Cut(kind, " after ")
	return kind
}
