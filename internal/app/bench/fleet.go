package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/childenv"
)

// Fleet mode: pickup latency (a job registered while workers sleep, to its
// first chunk) and the throughput of 1, 2 and 4 chunks worker processes.

// workers starts n chunks worker processes on schema and waits until each
// has logged that it is ready.
func workers(ctx context.Context, o Options, schema string, n int, poll time.Duration, extra ...string) (stop func() error, err error) {
	var cmds []*exec.Cmd
	stop = func() error {
		var errs []error
		for _, c := range cmds {
			errs = append(errs, c.Process.Signal(syscall.SIGTERM))
		}
		for _, c := range cmds {
			errs = append(errs, c.Wait())
		}
		return errors.Join(errs...)
	}
	for i := range n {
		cmd, err := startWorker(ctx, o, schema, fmt.Sprintf("bench-%d", i), poll, extra...)
		if err != nil {
			return nil, errors.Join(err, stop())
		}
		cmds = append(cmds, cmd)
	}
	return stop, nil
}

// startWorker starts one chunks worker process named id (its connections'
// application_name too) and waits until it has logged that it is ready.
func startWorker(ctx context.Context, o Options, schema, id string, poll time.Duration, extra ...string) (*exec.Cmd, error) {
	cmd := child(ctx, o, schema, append([]string{"worker", "--poll", poll.String(), "--id", id}, extra...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		found := false
		for sc.Scan() {
			if !found && strings.Contains(sc.Text(), "msg=ready") {
				found = true
				ready <- nil
			}
		}
		if !found {
			ready <- errors.New("chunks worker exited before it was ready")
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			return nil, errors.Join(err, cmd.Wait())
		}
	case <-time.After(30 * time.Second):
		return nil, errors.Join(errors.New("chunks worker not ready in 30s"), cmd.Process.Kill(), cmd.Wait())
	}
	return cmd, nil
}

// pickup measures register → the first chunk's audit rows, both read on
// the server's clock, for jobs registered one at a time while the workers
// are idle. With notify false the job is queued the way an upgrade queues
// it, with no NOTIFY, so only polling can find it.
// The trigger that notes the first audit row is dropped again at the end:
// left in place, it would cost the fleet throughput runs that follow in the
// same schema an insert per audit row.
func pickup(ctx context.Context, conn *pgx.Conn, seed *seeder, jobs int, notify bool) (s sample, err error) {
	if _, err := conn.Exec(ctx, `create table if not exists bench_pickup (job_id text primary key, at timestamptz not null);
		create or replace function bench_pickup_seen() returns trigger language plpgsql as $$
		begin
		  insert into bench_pickup values (new.job_id, clock_timestamp()) on conflict do nothing;
		  return null;
		end $$;
		drop trigger if exists bench_pickup on job_audit;
		create trigger bench_pickup after insert on job_audit for each row execute function bench_pickup_seen()`); err != nil {
		return s, err
	}
	defer func() {
		_, derr := conn.Exec(context.WithoutCancel(ctx), "drop trigger bench_pickup on job_audit")
		err = errors.Join(err, derr)
	}()
	start := time.Now()
	for i := range jobs {
		jobID := fmt.Sprintf("pickup-%t-%d", notify, i)
		id := seed.nextID
		seed.nextID++
		var registered time.Time
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "insert into orders values ($1, 'bench', 1, 'pending', 0)", id); err != nil {
				return err
			}
			target := fmt.Sprintf(`[{"id": %d, "revision": 0, "qty": 1}]`, id)
			var err error
			if notify {
				_, err = tx.Exec(ctx, `select register(jsonb_build_object('job_id', $1::text, 'tenant', 'bench',
				  'chunk_size', 1, 'allow_partial', true, 'targets', $2::jsonb))`, jobID, target)
			} else {
				// As an upgrade queues a job it recorded (migration 008
				// keeps the approval of a job from before it).
				if _, err = tx.Exec(ctx, "insert into jobs values ($1, 'bench', $2::jsonb, 1, 0)", jobID, target); err == nil {
					_, err = tx.Exec(ctx, `insert into job_approval (job_id, kind, tenant, chunk_size, targets_sha256, recorded_from)
					  values ($1, 'cancel', 'bench', 1, targets_sha256($2::jsonb), 'migration')`, jobID, target)
				}
				if err == nil {
					_, err = tx.Exec(ctx, "insert into job_queue (job_id, visible_at) values ($1, clock_timestamp())", jobID)
				}
			}
			if err != nil {
				return err
			}
			return tx.QueryRow(ctx, "select clock_timestamp()").Scan(&registered)
		}); err != nil {
			return s, err
		}
		var seen time.Time
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := conn.QueryRow(ctx, "select at from bench_pickup where job_id = $1", jobID).Scan(&seen)
			if err == nil {
				break
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return s, err
			}
			if time.Now().After(deadline) {
				return s, fmt.Errorf("job %s not picked up in 10s", jobID)
			}
			time.Sleep(2 * time.Millisecond)
		}
		s.latencies = append(s.latencies, seen.Sub(registered))
		s.chunks++
		s.orders++
	}
	s.elapsed = time.Since(start)
	return s, nil
}

// throughput unpauses ids, jobs of 64 targets, chunk size 10 (the shape of
// the chunks scenario) registered paused while the worker processes wait,
// all in one commit that notifies the workers, and times them from that
// commit until the queue is empty, looking every poll: 20 ms where the
// server's commits are counted (the polls are transactions too, and the
// commits of the last ones may not have reached pg_stat_database when it is
// read), 2 ms where only the time counts (a run of half a second is then
// timed to within 0.5 %).
func throughput(ctx context.Context, conn *pgx.Conn, ids []string, poll time.Duration) (sample, error) {
	return throughputOf(ctx, conn, ids, targetsPerJob, 10, poll)
}

// throughputOf is throughput of jobs of group targets each at chunk size
// size.
func throughputOf(ctx context.Context, conn *pgx.Conn, ids []string, group, size int, poll time.Duration) (sample, error) {
	start := time.Now()
	if _, err := conn.Exec(ctx, `with go as (update job_queue set paused = false, visible_at = clock_timestamp()
		where job_id = any($1) returning 1) select count(*), pg_notify(queue_channel(), 'go') from go`, ids); err != nil {
		return sample{}, err
	}
	// Poll cheaply: the polling shares the server with the workers. Each
	// poll is a transaction of its own, counted so that the commits per
	// chunk leave them out.
	polls := 0
	for {
		var left bool
		polls++
		if err := conn.QueryRow(ctx, "select exists (select from job_queue where job_id = any($1))", ids).Scan(&left); err != nil {
			return sample{}, err
		}
		if !left {
			break
		}
		if time.Since(start) > 5*time.Minute {
			return sample{}, errors.New("fleet throughput: jobs not done in 5 minutes")
		}
		time.Sleep(poll)
	}
	chunksPerJob := (group + size - 1) / size
	return sample{elapsed: time.Since(start), chunks: len(ids) * chunksPerJob, orders: len(ids) * group, ownTxs: polls + 1}, nil
}

// child is the chunks binary run with args on schema. It gets the
// connection string through its environment, never its argv, which anyone
// on the machine can read (ps).
func child(ctx context.Context, o Options, schema string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, o.Chunks, args...)
	cmd.Env = childenv.Env(o.Conn.ConnString(), schema)
	return cmd
}

// fleetPair measures one chunks worker process against RunChunk on one
// connection, side by side: in each round both drain the same number of
// fresh jobs of 64 targets at chunk size 10, the worker from its queue
// (registered paused, then released in one commit, as throughput does),
// RunChunk job after job, on jobs of its own that stay paused in the queue
// (the first version of this pair left them runnable: the worker ran
// chunks of them too, and RunChunk waited for it on their job rows). The
// worker and the connection are started and warmed up once, and the number
// of jobs is what RunChunk drains in half of d.
func fleetPair(ctx context.Context, o Options, cfg *pgx.ConnConfig, schema string, seed *seeder, rounds int) (p Pair, err error) {
	half := o.Duration / 2
	dr, err := newDrainer(ctx, cfg, seed, 10, runChunk, false)
	if err != nil {
		return p, err
	}
	defer func() { err = errors.Join(err, dr.close(ctx)) }()
	dr.paused = true // RunChunk's own jobs: the worker must not take them (run_chunk does not look at the queue)
	stop, err := workers(ctx, o, schema, 1, time.Second)
	if err != nil {
		return p, err
	}
	defer func() { err = errors.Join(err, stop()) }()
	warm, err := dr.drain(ctx, jobsFor(half.Seconds(), 10, 1), half)
	if err != nil {
		return p, err
	}
	n := max(4, int(chunksPerS(warm)*half.Seconds())/((targetsPerJob+9)/10))
	fleet := func() (sample, error) {
		ids, err := seed.register(ctx, n, 10, true)
		if err != nil {
			return sample{}, err
		}
		return throughput(ctx, seed.conn, ids, 2*time.Millisecond)
	}
	if _, err := fleet(); err != nil { // the worker's sessions make their plans
		return p, err
	}
	return sideBySide("one worker process vs RunChunk (size 10), the same number of jobs",
		"fleet, 1 worker process", "RunChunk, size 10", rounds, fleet, func() (sample, error) { return dr.drain(ctx, n, time.Hour) })
}
