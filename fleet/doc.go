// Package fleet drains many jobs across many worker processes: a queue in
// the chunks schema (the table job_queue), workers that take one chunk of
// one job per pass, and the operator's controls ([Status], [Pause],
// [PauseAfter], [Resume]). The chunks worker, status, pause and resume commands are thin
// layers over it.
//
// # The queue
//
// One row per runnable job, scored by visible_at: in the past means queued,
// a lease ahead means a worker holds it. register queues a new job in the
// same transaction that records it and sends a NOTIFY on the schema's
// channel (SQL queue_channel(): "chunks_" + schema). A pass claims the next
// visible row with FOR UPDATE SKIP LOCKED, so workers never wait for each
// other on the queue's head; the claim moves visible_at one lease ahead and
// hands out a receipt. After one chunk the pass releases the job with that
// receipt: removed when done, otherwise back at the end of the queue, so a
// big job cannot starve the others. A release whose receipt no longer
// matches (the lease ran out and someone else claimed the job) changes
// nothing.
//
// A worker that dies holds its jobs only until their leases run out; then
// any worker takes them over and runs the next chunk. The job row lock in
// run_chunk stays the fence: whatever the queue says, two workers never
// apply the same chunk, and every approved order changes exactly once.
//
// # Wakeups
//
// Each worker LISTENs on a dedicated connection (github.com/jackc/pgxlisten,
// reconnected when lost) and wakes an idle pass on every notification. It
// also polls every Poll, so a lost notification (a dropped connection, a
// job queued by a path that does not notify) only costs latency.
//
// # Operators
//
// [Status] lists every job: progress, queued / leased (by whom, until when)
// / paused / done / idle, and the drift count of its report. [Pause] keeps
// the fleet away from a job; [Resume] gives it back; [PauseAfter] is the
// canary: N more chunks, then the job pauses itself in the same transaction
// as the N-th. A worker pauses a job
// itself when a chunk meets a conflict (an order that changed since it was
// approved): that needs a person, and the other jobs go on.
//
// # Example
//
//	pool, err := pgxpool.New(ctx, "postgres://app@db/shop?search_path=lab")
//	if err != nil {
//		return err
//	}
//	defer pool.Close()
//	w := &fleet.Worker{Pool: pool, Concurrency: 4, Lease: 5 * time.Second, Poll: time.Second}
//	// Cancel stop to finish the chunks in flight and return nil; cancel
//	// abort to roll them back too.
//	return w.Run(stop, abort)
package fleet
