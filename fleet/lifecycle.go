package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chunks-dev/chunks/driver"
)

// firstListenWait bounds how long Start waits for its first LISTEN before
// the passes start anyway.
const firstListenWait = 5 * time.Second

// ErrAborted is what [Worker.Start] returns when [Worker.StopAndCancel]
// came, or its context ended, while it started, and what [Worker.Stop]
// returns when the chunks it waited for were cancelled that way: the
// passes that were in flight were cancelled, so their chunks rolled back.
var ErrAborted = errors.New("aborted: the chunks in flight were cancelled and rolled back")

// ErrStopped is what [Worker.Start] returns when [Worker.Stop] came before
// it, or while it waited for the database: the worker stopped before it
// ran any chunk.
var ErrStopped = errors.New("stopped before the worker started: no chunk ran")

// ErrNotInstalled is what [Worker.Start] returns when the connection's
// search_path has no chunks queue (run chunks migrate first).
var ErrNotInstalled = errors.New("no chunks queue on the search_path: run chunks migrate for this schema first")

// life is a Worker's lifecycle: what Stop and StopAndCancel asked for,
// and, once Start began, when the worker has stopped and how.
type life struct {
	quit, kill       context.Context // ended by Stop, by StopAndCancel
	endQuit, endKill context.CancelFunc
	started          bool
	done             chan struct{} // closed when a started worker has stopped
	err              error         // how it stopped (nil or ErrAborted), set before done closes
}

// lifecycle is w's life, made at the first call of Start, Stop or
// StopAndCancel.
func (w *Worker) lifecycle() *life {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.life == nil {
		l := &life{done: make(chan struct{})}
		l.quit, l.endQuit = context.WithCancel(context.Background())
		l.kill, l.endKill = context.WithCancel(context.Background())
		w.life = l
	}
	return w.life
}

// Start checks the fields ([Worker.Validate]), waits until the database is
// ready, takes the worker's ID on the server, starts Concurrency passes in
// the background and returns nil once they run. Stop it with [Worker.Stop]
// (the chunks in flight finish) or [Worker.StopAndCancel] (they roll
// back); when ctx ends, the worker stops as with StopAndCancel. A Worker
// starts once: a second Start is an [driver.ErrInvalid].
//
// Each pass is one call of [RunNext] (SQL run_next_chunk) on a connection
// of Pool: one round trip, one transaction, one commit. It takes the next
// runnable job (SKIP LOCKED), runs ONE chunk, and puts the job back at the
// end of the queue (rested 1/Rate s when Rate is set) or removes it when it
// is done. The locked queue row is the claim; it ends with the transaction,
// so a worker that dies leaves nothing behind, and its job is runnable
// again at once. A transient error of the chunk ([TransientChunkError]: a
// lock or statement timeout, a serialization failure, a deadlock, the
// server shutting down, a lost connection) rests the job RetryDelay. Any
// other error pauses the job in the same transaction, with the reason: a
// conflict (an order that no longer matches its approval, an unsound job),
// and every error that would come back at each try (a trigger's exception,
// a constraint, a privilege); an operator must look (chunks status,
// report), then resume it; other jobs go on. The worker itself never stops
// on a database error: it logs, waits and tries again, so a database
// restart costs only time.
//
// Idle passes wake on a notification (a dedicated LISTEN connection,
// reconnected when lost) and otherwise every Poll, so a lost notification
// only costs latency.
//
// Before the first pass, Start checks that the database is reachable,
// writable (not a standby) and has the queue on the search_path. It waits
// out transient faults ([Classify]: the server down, starting, out of
// connection slots, a standby not yet promoted), logging every attempt with
// its reason and trying again after 100 ms, then twice as long each time, up
// to 5 s. Stop meanwhile (or before Start) makes it return [ErrStopped];
// StopAndCancel or the end of ctx, [ErrAborted]. A permanent fault
// (authentication, an unknown database, the SQL refused, any other error
// of the server that is not transient) is returned at once. Then its first heartbeat takes its ID on the server (a
// session-level lock its heartbeat connection holds): when a live worker
// holds that ID, Start returns an [driver.ErrInvalid] naming it, before any
// pass. Start does not migrate: it returns [ErrNotInstalled] at once when
// the queue is not on the search_path. Once passes run, every error,
// transient or permanent, is logged and retried: a permanent one at error
// level, again every minute while it lasts.
func (w *Worker) Start(ctx context.Context) error {
	if err := w.Validate(); err != nil {
		return err
	}
	l := w.lifecycle()
	w.mu.Lock()
	again := l.started
	l.started = true
	w.mu.Unlock()
	if again {
		return driver.Invalidf("start: a Worker starts once, and this one was started already")
	}
	r, err := w.runner()
	if err != nil {
		l.end(nil)
		return err
	}
	abort, cancelAbort := context.WithCancel(ctx)
	unlinkKill := context.AfterFunc(l.kill, cancelAbort)
	stop, cancelStop := context.WithCancel(abort)
	unlinkQuit := context.AfterFunc(l.quit, cancelStop)
	// AfterFunc runs f in a goroutine of its own when its context has ended
	// already: a Stop or StopAndCancel before Start must end them now.
	if l.kill.Err() != nil {
		cancelAbort()
	}
	if l.quit.Err() != nil {
		cancelStop()
	}
	// end releases the contexts and says how the worker stopped.
	end := func() error {
		var how error
		if abort.Err() != nil {
			how = ErrAborted
		}
		unlinkQuit()
		unlinkKill()
		cancelStop()
		cancelAbort()
		r.pacer.Close() // its refresher, and the reading in flight
		l.end(how)
		return how
	}

	channel, err := r.waitReady(stop)
	if err != nil {
		end()
		return err
	}
	if stop.Err() != nil {
		r.log.Info("stopped before the database was ready: no chunk ran")
		if end() != nil {
			return ErrAborted
		}
		return ErrStopped
	}
	// The first heartbeat takes the worker's id on the server: a live
	// worker holding it refuses this one, before anything runs.
	heart := r.newHeart()
	if err := heart.first(abort); err != nil {
		end()
		return err
	}
	var wg, passes sync.WaitGroup
	started := make(chan bool, 1) // the first LISTEN attempt: true when it listens
	wg.Go(func() { r.listen(stop, channel, started) })
	// The heartbeat stops after the last pass: its last beat records the
	// progress of the chunks that were in flight when the worker stopped.
	beats, stopBeats := context.WithCancel(context.WithoutCancel(stop))
	wg.Go(func() { heart.run(beats, abort) })
	listening := false
	select { // the first LISTEN attempt, bounded: polling works without it
	case listening = <-started:
	case <-stop.Done():
	case <-time.After(firstListenWait):
	}
	for range r.passes {
		passes.Go(func() { r.pass(stop, abort) })
	}
	if stop.Err() == nil {
		rate := "none"
		if w.Rate > 0 {
			rate = fmt.Sprintf("%v chunks/s per job", w.Rate)
		}
		r.log.Info("ready", "concurrency", r.passes, "poll_ms", r.poll.Milliseconds(), "rate", rate,
			"retry_delay_ms", r.retryDelay.Milliseconds(), "channel", channel, "listening", listening)
	}
	go func() {
		<-stop.Done()
		if abort.Err() == nil {
			r.log.Info("stopping: no new chunk starts; waiting for the chunks in flight")
		}
		passes.Wait()
		stopBeats()
		wg.Wait()
		st := w.Stats()
		if abort.Err() != nil {
			r.log.Warn("aborted", "chunks", st.Chunks, "jobs_done", st.JobsDone)
		} else {
			r.log.Info("stopped", "chunks", st.Chunks, "jobs_done", st.JobsDone, "conflicts", st.Conflicts,
				"error_pauses", st.ErrorPauses, "failures", st.Failures)
		}
		end()
	}()
	return nil
}

// end records how the worker stopped and wakes whoever waits for it.
func (l *life) end(how error) {
	l.err = how
	close(l.done)
}

// Stop stops the worker gracefully: no new chunk starts, and the chunks in
// flight finish (they commit, or fail as they would have). It returns once
// they have and the worker has stopped: nil, or [ErrAborted] when
// [Worker.StopAndCancel] (or the end of Start's context) cancelled them
// meanwhile. When ctx ends first, Stop returns ctx's error and the worker
// goes on stopping; call Stop again to wait, or StopAndCancel. Stop before
// [Worker.Start] returns nil at once, and Start then returns [ErrStopped];
// Stop after the worker stopped returns how it stopped.
func (w *Worker) Stop(ctx context.Context) error {
	l := w.lifecycle()
	l.endQuit()
	return w.wait(ctx, l)
}

// StopAndCancel stops the worker and cancels the chunks in flight: their
// transactions roll back (give Pool's connections a cancel request, see
// [Worker.Pool]), and nothing of them is committed. It returns nil once the
// worker has stopped, or ctx's error when ctx ends first. Before
// [Worker.Start] it returns nil at once, and Start then returns
// [ErrAborted].
func (w *Worker) StopAndCancel(ctx context.Context) error {
	l := w.lifecycle()
	l.endKill()
	if err := w.wait(ctx, l); err != nil && !errors.Is(err, ErrAborted) {
		return err
	}
	return nil
}

// wait waits until the started worker has stopped and returns how, or
// ctx's error when ctx ends first; nil when it was never started.
func (w *Worker) wait(ctx context.Context, l *life) error {
	w.mu.Lock()
	started := l.started
	w.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-l.done:
		return l.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
