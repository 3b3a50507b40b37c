package fleet

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
)

// heartbeatEvery is how often a worker updates its row in workers.
const heartbeatEvery = time.Second

// heart sends a worker's heartbeats (SQL worker_heartbeat) on a connection
// of its own. That session holds the worker's lock on the server
// (worker_lock_key) for as long as it lives: it is what makes the worker
// alive in the worker list, and what refuses a second worker with the same
// id. A lost connection is opened again at the next beat, which takes the
// lock again.
type heart struct {
	r       *runner
	host    string
	started time.Time
	conn    *pgx.Conn // nil or closed: opened at the next beat
	log     quiet
}

func (r *runner) newHeart() *heart {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return &heart{r: r, host: host, started: time.Now()}
}

// exec runs sql on the heartbeat's connection, opening it first when it is
// not open.
func (h *heart) exec(ctx context.Context, sql string, args ...any) error {
	if h.conn == nil || h.conn.IsClosed() {
		conn, err := pgx.ConnectConfig(ctx, h.r.pool.Config().ConnConfig.Copy())
		if err != nil {
			return err
		}
		h.conn = conn
	}
	_, err := h.conn.Exec(ctx, sql, args...)
	return err
}

// beat sends one heartbeat, with the progress of the jobs the worker moved
// since the last one (record_progress). On failure the progress is kept
// for the next beat.
func (h *heart) beat(abort context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(abort), heartbeatEvery)
	defer cancel()
	r := h.r
	state, reason := r.state()
	seen := r.w.progress.take()
	args := []any{r.id, h.host, os.Getpid(), h.started, r.w.chunks.Load(), state, reason}
	sql := "select worker_heartbeat($1, $2, $3, $4, $5, $6, $7)"
	var err error
	if len(seen) > 0 {
		// One statement: the worker's row, and the progress of the jobs it
		// moved since the last heartbeat (the rate and ETA of chunks status
		// and the status page).
		var body []byte
		body, err = samples(seen, time.Now())
		sql, args = sql+", record_progress($8::jsonb)", append(args, string(body))
	}
	if err == nil {
		err = h.exec(ctx, sql, args...)
		err = driver.ExplainMissing(ctx, r.pool, err, driver.Operator) // access revoked while it runs
	}
	if err != nil {
		r.w.progress.putBack(seen)
	}
	return err
}

// first is the first beat, before any pass starts: a worker whose id a
// live worker holds is refused (an [driver.ErrInvalid] naming the live
// one). Any other failure is logged, as every beat's is, and the worker
// starts anyway.
func (h *heart) first(abort context.Context) error {
	err := h.beat(abort)
	if mapped := driver.MapError(err); errors.Is(mapped, driver.ErrInvalid) {
		return errors.Join(mapped, h.close())
	}
	h.logged(err)
	return nil
}

// logged logs err once until the next success (nil).
func (h *heart) logged(err error) {
	if err == nil {
		h.log.ok()
		return
	}
	if repeats, ok := h.log.first(err); ok {
		h.r.logFault("heartbeat failed; chunks status may not show this worker or its jobs' rate", err, repeats)
	}
}

// run beats every heartbeatEvery until stop ends; then it records the
// last progress, deletes the worker's row (worker_gone, in the session that
// holds its lock) and closes the connection. A failure never stops the
// worker.
func (h *heart) run(stop, abort context.Context) {
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop.Done():
			ctx, cancel := context.WithTimeout(context.WithoutCancel(abort), heartbeatEvery)
			defer cancel()
			body, err := samples(h.r.w.progress.take(), time.Now())
			if err == nil {
				err = h.exec(ctx, "select record_progress($2::jsonb), worker_gone($1)", h.r.id, string(body))
			}
			if err = errors.Join(err, h.close()); err != nil {
				h.r.log.Warn("could not remove this worker's heartbeat row; it is not shown once its session is gone", "error", err)
			}
			return
		case <-tick.C:
			h.logged(h.beat(abort))
		}
	}
}

// close closes the heartbeat's connection, which releases the worker's lock.
func (h *heart) close() error {
	if h.conn == nil || h.conn.IsClosed() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), heartbeatEvery)
	defer cancel()
	return h.conn.Close(ctx)
}

// state is what the worker is doing: throttled (with the reason), running
// (it committed a chunk in the last heartbeat interval) or idle.
func (r *runner) state() (state string, reason *string) {
	if st := r.pacer.State(); st.Throttled {
		return "throttled", &st.Reason
	}
	if time.Since(time.Unix(0, r.w.lastChunk.Load())) < 2*heartbeatEvery {
		return "running", nil
	}
	return "idle", nil
}
