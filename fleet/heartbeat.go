package fleet

import (
	"context"
	"os"
	"time"
)

// heartbeatEvery is how often a worker updates its row in workers.
const heartbeatEvery = time.Second

// heartbeat keeps this worker's row in the workers table (SQL
// worker_heartbeat) until stop ends, then deletes it (worker_gone). A
// failure is logged once until the next success; it never stops the
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
		_, err := r.pool.Exec(ctx, "select worker_heartbeat($1, $2, $3, $4, $5, $6, $7)",
			r.id, host, os.Getpid(), started, r.w.chunks.Load(), state, reason)
		if err != nil {
			if repeats, ok := log.first(err); ok {
				r.logFault("heartbeat failed; chunks status may not show this worker", err, repeats)
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
			if _, err := r.pool.Exec(ctx, "select worker_gone($1)", r.id); err != nil {
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
