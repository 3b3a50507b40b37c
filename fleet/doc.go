// Package fleet drains many jobs across many worker processes: a queue in
// the chunks schema (the table job_queue), workers that take one chunk of
// one job per pass, and the operator's controls ([Status], [Pause],
// [PauseAfter], [Resume]). The chunks worker, status, pause and resume commands are thin
// layers over it.
//
// # The queue
//
// One row per runnable job, ordered by visible_at. register queues a new job
// in the same transaction that records it and sends a NOTIFY on the schema's
// channel (SQL queue_channel(): "chunks_" + schema). A pass ([RunNext], SQL
// run_next_chunk) is one transaction: it takes the next visible row with FOR
// UPDATE SKIP LOCKED, so workers never wait for each other on the queue's
// head, runs one chunk of that job, and removes the job when it is done or
// puts it back at the end of the queue, so a big job cannot starve the
// others. The locked row is the claim: there is no lease, and a worker that
// dies holds nothing once its transaction has ended. The job row lock in
// run_chunk stays the fence: two workers never apply the same chunk, and
// every approved order changes exactly once.
//
// # Faults
//
// A pass that fails commits nothing, so the worker logs it and tries again;
// it never stops on a database error once it runs. At start it waits out
// transient faults (the server down or starting, no free connection slot, a
// standby not yet promoted) and returns permanent ones at once ([Classify]).
//
// A chunk that fails is rolled back, and what becomes of its job is
// recorded in the same commit: after a transient error
// ([TransientChunkError]: a lock or statement timeout, a serialization
// failure, a deadlock, the server shutting down, a lost connection) the job
// rests RetryDelay and is tried again; after any other error it is paused,
// with the reason.
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
// [Status] lists every job: progress, queued / running (in which session) /
// paused / done / idle, and the drift count of its report. [Pause] keeps
// the fleet away from a job; [Resume] gives it back; [PauseAfter] is the
// canary: N more chunks, then the job pauses itself in the same transaction
// as the N-th. A worker pauses a job
// itself when a chunk meets a conflict (an order that changed since it was
// approved) or any other error that is not transient (a trigger's
// exception, a constraint): that needs a person, and the other jobs go on.
//
// # Watching
//
// [LoadOverview] reads the fleet in one query (SQL status_page), however many jobs
// there are: a page of jobs with their drift, recent rate and [ETA], the
// live workers, and counts over every job. A [Worker]'s heartbeat records
// the progress of the jobs it ran (SQL record_progress), which is where the
// rate comes from; its [Observer] hears of every pass, for metrics.
//
// # Example
//
//	pool, err := pgxpool.New(ctx, "postgres://app@db/shop?search_path=lab")
//	if err != nil {
//		return err
//	}
//	defer pool.Close()
//	w := &fleet.Worker{Pool: pool, Concurrency: 4, Poll: time.Second}
//	if err := w.Start(ctx); err != nil {
//		return err // bad settings, no queue, a permanent fault, the ID taken
//	}
//	<-shutdown
//	// Stop lets the chunks in flight finish; StopAndCancel rolls them back.
//	return w.Stop(ctx)
package fleet
