package fleet

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chunks-dev/chunks/pace"
)

// lagReadings counts the pacer's readings of pg_stat_replication.
type lagReadings struct{ n atomic.Int64 }

// TraceQueryStart counts a query that reads pg_stat_replication.
func (c *lagReadings) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "pg_stat_replication") {
		c.n.Add(1)
	}
	return ctx
}

// TraceQueryEnd does nothing.
func (c *lagReadings) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// The lag check on a real caught-up standby skips its query while the last
// one found the standby far below the limit (pace's skip rule): with a
// limit of 4 s read every 100 ms, 3 s of commits cost a handful of
// readings (8 in a run), where a reading every interval is 30 (29 before
// the rule). And the skip hides no
// standby that falls behind: once the standby stops applying WAL
// (recovery_min_apply_delay of an hour), the pacer holds new chunks, for
// the replica, before the standby is twice the limit behind.
func TestReplicaLagCheckSkipsWhileFarBelowTheLimit(t *testing.T) {
	t.Parallel()
	l, _, standby := replicated(t, 0)
	replayed(t, l, standby, 10*time.Second)
	l.Exec(t, "create table pace_commits(n integer)")
	cfg, err := pgxpool.ParseConfig(l.DSN)
	if err != nil {
		t.Fatal(err)
	}
	readings := &lagReadings{}
	cfg.ConnConfig.Tracer = readings
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	const limit = 4 * time.Second
	p, err := pace.New(pace.Config{MaxReplicaLag: limit, CheckInterval: 100 * time.Millisecond}, pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// chunk waits as a worker does before a chunk, commits one, and says so.
	chunk := func(wctx context.Context, onHold func(pace.State)) error {
		if err := p.Wait(wctx, onHold); err != nil {
			return err
		}
		if _, err := pool.Exec(ctx, "insert into pace_commits values (1)"); err != nil {
			t.Fatal(err)
		}
		p.Committed()
		return nil
	}
	chunks := 0
	for start := time.Now(); time.Since(start) < 3*time.Second; chunks++ {
		if err := chunk(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := readings.n.Load(); got > 15 || chunks < 10 {
		t.Fatalf("%d lag readings for %d commits in 3 s (limit 4s, interval 100ms): want at most 15, half of one per interval", got, chunks)
	}
	t.Logf("%d lag readings for %d commits in 3 s", readings.n.Load(), chunks)

	if err := standby.SetApplyDelay(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := standby.SetApplyDelay(ctx, 0); err != nil {
			t.Error(err)
		}
	}()
	stalled := time.Now()
	hctx, held := context.WithCancel(ctx)
	defer held()
	var hold pace.State
	for {
		err := chunk(hctx, func(st pace.State) { hold = st; held() })
		if err != nil {
			break
		}
		if time.Since(stalled) > 2*limit {
			t.Fatalf("still no hold %v after the standby stopped applying WAL (limit %v)", time.Since(stalled), limit)
		}
	}
	if hold.Cause != pace.CauseReplicaLag || !strings.HasPrefix(hold.Reason, "replica standby1 is ") {
		t.Fatalf("hold %+v, want one for replica standby1", hold)
	}
	t.Logf("held %v after the stall: %s", time.Since(stalled), hold.Reason)
}
