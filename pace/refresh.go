package pace

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
)

// start runs the refresher until Close.
func (p *Pacer) start() {
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	go func() {
		defer close(p.done)
		p.refresh(ctx)
	}()
}

// refresh reads the signals each time Wait asks, at most every
// CheckInterval, and publishes each reading's snapshot.
func (p *Pacer) refresh(ctx context.Context) {
	var failed string // the last failure logged, so that a failure that repeats is logged once
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		last := p.snap.Load()
		if wait := p.cfg.CheckInterval - time.Since(last.read); !last.read.IsZero() && wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		}
		began := time.Now()
		p.mu.Lock()
		committed := len(p.unread)
		before := p.unread[:committed:committed]
		p.mu.Unlock()
		r := p.read(ctx)
		r.began = began
		if ctx.Err() != nil {
			return // closing: the reading was cancelled, not failed
		}
		next := observe(p.cfg.MaxReplicaLag, last, r, before)
		next.until = skipUntil(p.cfg, next, r.began)
		p.snap.Store(next)
		// Publish before forgetting: a chunk may be counted twice for a
		// moment (held longer), never not at all.
		p.mu.Lock()
		p.unread = append(p.unread[:0:0], p.unread[committed:]...)
		p.mu.Unlock()
		close(last.replaced)
		// Logged once published: from then on every Wait decides on this
		// reading, so "held" is true when the line is written. (Logged
		// first, a Wait could still go ahead on the last good reading
		// while it is within its skip window, after the line.)
		if r.err != nil && r.err.Error() != failed {
			p.log.Error("pace: reading the signals failed; new chunks are held until a reading succeeds", "error", r.err)
		}
		failed = ""
		if r.err != nil {
			failed = r.err.Error()
		}
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

// read reads the signals in one READ ONLY transaction whose statements
// may each take ReadTimeout at most. A failure is the reading's err, named
// for the signal that failed.
func (p *Pacer) read(ctx context.Context) reading {
	var r reading
	what := "replica lag check"
	ctx, cancel := context.WithTimeout(ctx, p.timeout+time.Second) // the server's statement_timeout fires first
	defer cancel()
	err := pgx.BeginTxFunc(ctx, p.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "select set_config('statement_timeout', $1, true)",
			fmt.Sprintf("%dms", p.timeout.Milliseconds())); err != nil {
			return err
		}
		if p.cfg.MaxReplicaLag > 0 {
			if err := p.readReplicas(ctx, tx, &r); err != nil {
				return err
			}
		}
		if p.cfg.ThrottleQuery != "" {
			what = "throttle query"
			hold, err := p.runThrottleQuery(ctx, tx)
			if err != nil {
				return err
			}
			r.hold = hold
		}
		return nil
	})
	r.at = time.Now()
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
	case errors.As(err, &pgErr) && pgErr.Code == pgerrcode.QueryCanceled, errors.Is(err, context.DeadlineExceeded):
		r.err = fmt.Errorf("%s timed out after %v", what, p.timeout)
	default:
		r.err = fmt.Errorf("%s failed: %w", what, err)
	}
	return r
}

func (p *Pacer) readReplicas(ctx context.Context, tx pgx.Tx, r *reading) error {
	var hidden int64
	var names []string
	var lsns, lags []*int64
	if err := tx.QueryRow(ctx, replicasQuery).Scan(&r.current, &hidden, &names, &lsns, &lags); err != nil {
		return err
	}
	if hidden > 0 {
		return fmt.Errorf("%d standbys in pg_stat_replication show no details to this role: grant it pg_monitor "+
			"(GRANT pg_monitor TO role) to use --max-replica-lag", hidden)
	}
	for i, name := range names {
		s := standby{name: name, replayLSN: -1, replayLag: -1}
		if lsns[i] != nil {
			s.replayLSN = *lsns[i]
		}
		if lags[i] != nil {
			s.replayLag = time.Duration(*lags[i]) * time.Microsecond
		}
		r.standbys = append(r.standbys, s)
	}
	return nil
}

// runThrottleQuery runs the operator's query, one statement (see
// [driver.QueryOne]), and reads its one boolean.
func (p *Pacer) runThrottleQuery(ctx context.Context, tx pgx.Tx) (hold bool, err error) {
	rows, err := driver.QueryOne(ctx, tx, "--throttle-query", p.cfg.ThrottleQuery)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
		vals, err := rows.Values()
		if err != nil {
			return false, err
		}
		if len(vals) != 1 {
			return false, fmt.Errorf("it must return one boolean, got %d columns", len(vals))
		}
		b, ok := vals[0].(bool)
		if !ok {
			return false, fmt.Errorf("it must return one boolean, got %T", vals[0])
		}
		hold = b
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	if n != 1 {
		return false, fmt.Errorf("it must return one row, got %d", n)
	}
	return hold, nil
}
