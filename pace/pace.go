// Package pace holds back new chunks while the database's health says so:
// a streaming standby too far behind in replay (--max-replica-lag), or the
// operator's own signal (--throttle-query). chunks worker asks before each
// pass and chunks drain before each call. Throttling is waiting, never
// failing: a [Pacer] only ever makes its caller wait.
//
// # How replica lag is measured
//
// From the primary, with one query at most every CheckInterval and no
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
package pace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chunks-dev/chunks/driver"
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
type Pacer struct {
	cfg  Config
	pool *pgxpool.Pool
	log  *slog.Logger

	mu        sync.Mutex
	read      time.Time // when the signals were last read
	standbys  []standby
	samples   []sample           // primary positions read, oldest first
	pending   []commit           // this process's chunks that some standby has not replayed yet, oldest first
	slow      map[string]*replay // per standby: how long it took to replay our last chunk it replayed
	query     error              // the throttle query's failure, if it failed
	queryHold bool               // the throttle query's answer
	state     State
	since     time.Time // when the current throttling started
}

type standby struct {
	name      string
	replayLSN int64
	replayLag time.Duration // -1: not shown
}

type sample struct {
	lsn int64
	at  time.Time
}

// commit is a chunk of this process: when it committed, and the primary's
// position in the first reading after it (0 until then).
type commit struct {
	at  time.Time
	lsn int64
}

// replay is what the pacer knows of a standby's speed.
type replay struct {
	took  time.Duration // the replay time last measured (or the replay_lag shown before any)
	slow  bool          // took > the maximum
	timed bool          // took was measured on a chunk of ours
}

// New returns a pacer that reads the signals on pool and logs throttling
// on log. A zero cfg makes a pacer that never holds and never queries.
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
	return &Pacer{cfg: cfg, pool: pool, log: log, slow: map[string]*replay{}}, nil
}

// State is the last decision; a nil pacer never throttles.
func (p *Pacer) State() State {
	if p == nil {
		return State{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// Committed tells the pacer that a chunk of this process just committed.
func (p *Pacer) Committed() {
	if p.cfg.Off() {
		return
	}
	p.mu.Lock()
	if len(p.pending) < 10000 {
		p.pending = append(p.pending, commit{at: time.Now()})
	}
	p.mu.Unlock()
}

// Wait returns when a new chunk may start, or with ctx's error when ctx
// ends first. While it holds, it reads the signals again every
// CheckInterval, and it logs once when throttling starts and once when it
// ends, with the time spent. onHold, when not nil, is called with the
// state each time Wait decides to hold (for a progress bar or a heartbeat).
func (p *Pacer) Wait(ctx context.Context, onHold func(State)) error {
	if p.cfg.Off() {
		return ctx.Err()
	}
	for {
		st := p.decide(ctx)
		if !st.Throttled && !st.calibrating {
			return ctx.Err()
		}
		if onHold != nil && st.Throttled {
			onHold(st)
		}
		timer := time.NewTimer(p.cfg.CheckInterval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// decide reads the signals when the last reading is older than
// CheckInterval, and judges them.
func (p *Pacer) decide(ctx context.Context) State {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.read) >= p.cfg.CheckInterval {
		p.refresh(ctx, now)
	}
	st := p.judge(time.Now())
	switch {
	case st.Throttled && !p.state.Throttled:
		p.since = time.Now()
		level := slog.LevelInfo
		if p.query != nil {
			level = slog.LevelError // a signal that cannot be read holds: say it loudly
		}
		p.log.Log(ctx, level, "throttling: holding new chunks", "reason", st.Reason)
	case !st.Throttled && p.state.Throttled:
		p.log.Info("throttling ended", "held_ms", time.Since(p.since).Milliseconds(), "was", p.state.Reason)
	case st.Throttled && reasonKind(st.Reason) != reasonKind(p.state.Reason):
		p.log.Info("throttling: still holding, for another reason", "reason", st.Reason)
	}
	p.state = st
	return st
}

// reasonKind is the reason without its figures, so that a lag that grows
// is not logged as a new reason.
func reasonKind(reason string) string {
	kind, _, _ := strings.Cut(reason, " is ")
	return kind
}

// refresh reads the signals. A failure to read them is kept as the reason
// to hold: throttling fails safe.
func (p *Pacer) refresh(ctx context.Context, now time.Time) {
	p.read = now
	p.query = nil
	if p.cfg.MaxReplicaLag > 0 {
		if err := p.readReplicas(ctx); err != nil {
			p.query = fmt.Errorf("replica lag check failed: %w", err)
			return
		}
	}
	if p.cfg.ThrottleQuery != "" {
		hold, err := p.runThrottleQuery(ctx)
		if err != nil {
			p.query = fmt.Errorf("throttle query failed: %w", err)
			return
		}
		p.queryHold = hold
	}
}

const replicasQuery = `
select (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint,
       (select count(*) from pg_stat_replication as r where r.state is null),
       coalesce(array_agg(r.application_name::text order by r.application_name), '{}'),
       coalesce(array_agg((r.replay_lsn - '0/0'::pg_lsn)::bigint order by r.application_name), '{}'),
       coalesce(array_agg((extract(epoch from r.replay_lag) * 1000000)::bigint order by r.application_name), '{}')
  from pg_stat_replication as r
 where r.state in ('streaming', 'catchup')`

func (p *Pacer) readReplicas(ctx context.Context) error {
	var current, hidden int64
	var names []string
	var lsns, lags []*int64
	if err := p.pool.QueryRow(ctx, replicasQuery).Scan(&current, &hidden, &names, &lsns, &lags); err != nil {
		return err
	}
	if hidden > 0 {
		return fmt.Errorf("%d standbys in pg_stat_replication show no details to this role: grant it pg_monitor "+
			"(GRANT pg_monitor TO role) to use --max-replica-lag", hidden)
	}
	p.standbys = p.standbys[:0]
	for i, name := range names {
		s := standby{name: name, replayLSN: -1, replayLag: -1}
		if lsns[i] != nil {
			s.replayLSN = *lsns[i]
		}
		if lags[i] != nil {
			s.replayLag = time.Duration(*lags[i]) * time.Microsecond
		}
		p.standbys = append(p.standbys, s)
	}
	at := time.Now()
	p.samples = append(p.samples, sample{lsn: current, at: at})
	p.prune()
	// Chunks committed before this reading are covered by its position.
	for i := range p.pending {
		if p.pending[i].lsn == 0 && p.pending[i].at.Before(at) {
			p.pending[i].lsn = current
		}
	}
	for _, s := range p.standbys {
		r := p.slow[s.name]
		if r == nil {
			// First seen: judge by the replay_lag it shows.
			r = &replay{took: max(s.replayLag, 0)}
			r.slow = r.took > p.cfg.MaxReplicaLag
			p.slow[s.name] = r
		}
		// Time the newest of our chunks it has replayed; a chunk it has
		// not replayed for longer than the maximum makes it slow already.
		for _, c := range p.pending {
			switch {
			case c.lsn != 0 && s.replayLSN >= c.lsn:
				r.took = at.Sub(c.at)
				r.slow, r.timed = r.took > p.cfg.MaxReplicaLag, true
			case at.Sub(c.at) > p.cfg.MaxReplicaLag:
				r.took, r.slow, r.timed = max(r.took, at.Sub(c.at)), true, true
			}
		}
	}
	// Forget the chunks every standby has replayed.
	keep := p.pending[:0]
	for _, c := range p.pending {
		if c.lsn == 0 || slices.ContainsFunc(p.standbys, func(s standby) bool { return s.replayLSN < c.lsn }) {
			keep = append(keep, c)
		}
	}
	p.pending = keep
	return nil
}

// prune keeps the samples that some standby still needs (the oldest one it
// has not replayed, and the one before it), and at most 10,000.
func (p *Pacer) prune() {
	oldest := int64(-1)
	for _, s := range p.standbys {
		if oldest < 0 || s.replayLSN < oldest {
			oldest = s.replayLSN
		}
	}
	keep := 0
	for keep < len(p.samples)-1 && p.samples[keep+1].lsn <= oldest {
		keep++
	}
	p.samples = p.samples[keep:]
	if len(p.samples) > 10000 {
		p.samples = p.samples[len(p.samples)-10000:]
	}
}

// calibrating reports whether s has not been timed on a chunk of ours yet
// and has a chunk of ours to replay: the pacer then waits for that first
// replay (a fraction of a second on a healthy standby), without calling it
// throttling, rather than guess its speed and let a burst of chunks through.
func (p *Pacer) calibrating(s standby) bool {
	r := p.slow[s.name]
	if r == nil || r.timed || r.slow {
		return false
	}
	for _, c := range p.pending {
		if c.lsn == 0 || c.lsn > s.replayLSN {
			return true
		}
	}
	return false
}

// behind is how far s is behind at now: the age of the oldest position
// it has not replayed, of those read and of this process's chunks; and,
// for a slow standby with a chunk of ours to replay, at least what its last
// replay took.
func (p *Pacer) behind(s standby, now time.Time) time.Duration {
	var lag time.Duration
	for _, x := range p.samples {
		if x.lsn > s.replayLSN {
			lag = now.Sub(x.at)
			break
		}
	}
	for _, c := range p.pending {
		if c.lsn == 0 || c.lsn > s.replayLSN {
			lag = max(lag, now.Sub(c.at))
			if r := p.slow[s.name]; r != nil && r.slow {
				lag = max(lag, r.took)
			}
			break
		}
	}
	return lag
}

// judge decides from the last reading.
func (p *Pacer) judge(now time.Time) State {
	if p.query != nil {
		return State{Throttled: true, Reason: p.query.Error(), Cause: CauseCheckFailed}
	}
	var st State
	if p.cfg.MaxReplicaLag > 0 && len(p.samples) > 0 {
		worst, worstName := time.Duration(0), ""
		for _, s := range p.standbys {
			if lag := p.behind(s, now); lag > worst {
				worst, worstName = lag, s.name
			}
			if p.calibrating(s) {
				st.calibrating = true
			}
		}
		st.Lag = worst
		if worst > p.cfg.MaxReplicaLag {
			return State{Throttled: true, Lag: worst, Cause: CauseReplicaLag,
				Reason: fmt.Sprintf("replica %s is %.1f s behind (max %v)", worstName, worst.Seconds(), p.cfg.MaxReplicaLag)}
		}
	}
	if p.cfg.ThrottleQuery != "" && p.queryHold {
		st.Throttled, st.Reason, st.Cause = true, "the throttle query returned true", CauseThrottleQuery
	}
	return st
}

// runThrottleQuery runs the operator's query, one statement (see
// [driver.QueryOne]), in a READ ONLY transaction and reads its one boolean.
func (p *Pacer) runThrottleQuery(ctx context.Context) (hold bool, err error) {
	err = pgx.BeginTxFunc(ctx, p.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := driver.QueryOne(ctx, tx, "--throttle-query", p.cfg.ThrottleQuery)
		if err != nil {
			return err
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			n++
			vals, err := rows.Values()
			if err != nil {
				return err
			}
			if len(vals) != 1 {
				return fmt.Errorf("it must return one boolean, got %d columns", len(vals))
			}
			b, ok := vals[0].(bool)
			if !ok {
				return fmt.Errorf("it must return one boolean, got %T", vals[0])
			}
			hold = b
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("it must return one row, got %d", n)
		}
		return nil
	})
	return hold, err
}
