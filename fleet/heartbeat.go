package fleet

import (
	"context"
	"os"
	"time"

	"github.com/chunks-dev/chunks/driver"
)

// heartbeatEvery is how often a worker updates its row in workers.
const heartbeatEvery = time.Second

// heartbeat keeps this worker's row in the workers table (SQL
// worker_heartbeat) until stop ends, then deletes it (worker_gone). With
// each beat it records the progress of the jobs the worker moved since the
// last one (record_progress). A failure is logged once until the next
// success, and the progress is kept for the next beat; it never stops the
// worker.
func (r *runner) heartbeat(stop, abort context.Context) {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	started := time.Now()
	var log quiet
	beat := func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(abort), heartbeatEvery)
		defer cancel()
		state, reason := r.state()
		seen := r.w.progress.take()
		args := []any{r.id, host, os.Getpid(), started, r.w.chunks.Load(), state, reason}
		sql := "select worker_heartbeat($1, $2, $3, $4, $5, $6, $7)"
		var err error
		if len(seen) > 0 {
			// One statement: the worker's row, and the progress of the jobs
			// it moved since the last heartbeat (the rate and ETA of chunks
			// status and the status page).
			var body []byte
			body, err = samples(seen, time.Now())
			sql, args = sql+", record_progress($8::jsonb)", append(args, string(body))
		}
		if err == nil {
			_, err = r.pool.Exec(ctx, sql, args...)
			err = driver.ExplainMissing(ctx, r.pool, err, driver.Operator) // access revoked while it runs
		}
		if err != nil {
			r.w.progress.putBack(seen)
			if repeats, ok := log.first(err); ok {
				r.logFault("heartbeat failed; chunks status may not show this worker or its jobs' rate", err, repeats)
			}
			return
		}
		log.ok()
	}
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	for beat(); ; beat() {
		select {
		case <-stop.Done():
			ctx, cancel := context.WithTimeout(context.WithoutCancel(abort), heartbeatEvery)
			defer cancel()
			body, err := samples(r.w.progress.take(), time.Now())
			if err == nil {
				_, err = r.pool.Exec(ctx, "select record_progress($2::jsonb), worker_gone($1)", r.id, string(body))
			}
			if err != nil {
				r.log.Warn("could not remove this worker's heartbeat row; it shows as gone after 10 s", "error", err)
			}
			return
		case <-tick.C:
		}
	}
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
