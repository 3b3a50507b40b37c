package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// takeover measures how long a job waits after the worker inside one of
// its chunks is killed (SIGKILL): from the kill until another worker has
// committed a chunk of the job after the one in flight. The victim's chunks
// take 300 ms (a trigger sleeps for its sessions), so the kill always lands
// inside one; that chunk's statement had reached the server, which finishes
// it, so the figure includes what is left of those 300 ms. The surviving
// worker is held by a throttle query until the kill (checked every 10 ms,
// which the figure includes too), so that the victim takes the job.
func takeover(ctx context.Context, o Options, conn *pgx.Conn, schema string, seed *seeder, trials int) (s sample, err error) {
	if _, err := conn.Exec(ctx, `create or replace function bench_slow_victim() returns trigger language plpgsql as $$
		begin
		  if current_setting('application_name') = 'bench-victim' then perform pg_sleep(0.3); end if;
		  return null;
		end $$;
		create trigger bench_slow_victim after update on orders for each statement execute function bench_slow_victim();
		create table bench_takeover_go (killed boolean)`); err != nil {
		return s, err
	}
	defer func() {
		_, derr := conn.Exec(context.WithoutCancel(ctx), "drop trigger bench_slow_victim on orders; drop table bench_takeover_go")
		err = errors.Join(err, derr)
	}()
	// The survivor holds (its throttle query) until the victim is killed,
	// so that the victim, not the survivor, takes each trial's job.
	hold := "select not exists (select from " + pgx.Identifier{schema, "bench_takeover_go"}.Sanitize() + ")"
	other, err := startWorker(ctx, o, schema, "bench-survivor", 50*time.Millisecond,
		"--throttle-query", hold, "--check-interval", "10ms")
	if err != nil {
		return s, err
	}
	defer func() { err = errors.Join(err, stopProcess(other)) }()
	for range trials {
		took, err := takeoverOnce(ctx, o, conn, schema, seed)
		if err != nil {
			return s, err
		}
		s.latencies = append(s.latencies, took)
		s.elapsed += took
		s.chunks++
	}
	return s, nil
}

// takeoverOnce is one trial: a fresh job, a victim worker that takes it,
// the kill, and the wait for the survivor.
func takeoverOnce(ctx context.Context, o Options, conn *pgx.Conn, schema string, seed *seeder) (time.Duration, error) {
	if _, err := conn.Exec(ctx, "delete from bench_takeover_go"); err != nil {
		return 0, err
	}
	victim, err := startWorker(ctx, o, schema, "bench-victim", 50*time.Millisecond)
	if err != nil {
		return 0, err
	}
	ids, err := seed.register(ctx, 1, 1, false)
	if err != nil {
		return 0, errors.Join(err, victim.Process.Kill(), victim.Wait())
	}
	job := ids[0]
	// Wait until the victim is inside a chunk of the job.
	var at int
	deadline := time.Now().Add(10 * time.Second)
	for {
		var running bool
		err := conn.QueryRow(ctx, `select coalesce(s ->> 'running_in' = 'bench-victim', false), (s ->> 'next_index')::int
			from jsonb_array_elements(job_status()) as s where s ->> 'job_id' = $1`, job).Scan(&running, &at)
		if err != nil {
			return 0, errors.Join(err, victim.Process.Kill(), victim.Wait())
		}
		if running {
			break
		}
		if time.Now().After(deadline) {
			return 0, errors.Join(fmt.Errorf("takeover: the victim never ran job %s", job), victim.Process.Kill(), victim.Wait())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := victim.Process.Kill(); err != nil {
		return 0, err
	}
	killed := time.Now()
	if _, err := conn.Exec(ctx, "insert into bench_takeover_go values (true)"); err != nil {
		return 0, err
	}
	if err := waitKilled(victim); err != nil {
		return 0, err
	}
	for {
		var next int
		if err := conn.QueryRow(ctx, "select next_index from jobs where job_id = $1", job).Scan(&next); err != nil {
			return 0, err
		}
		if next >= at+2 {
			return time.Since(killed), nil
		}
		if time.Since(killed) > 30*time.Second {
			return 0, fmt.Errorf("takeover: job %s did not move on in 30 s after the kill", job)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// stopProcess ends a worker process with SIGTERM and waits for it.
func stopProcess(cmd *exec.Cmd) error {
	return errors.Join(cmd.Process.Signal(syscall.SIGTERM), cmd.Wait())
}

// waitKilled waits for a process this benchmark killed: an exit by SIGKILL
// is what it expects, anything else is an error.
func waitKilled(cmd *exec.Cmd) error {
	err := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return nil
		}
	}
	return fmt.Errorf("the killed worker: %v", err)
}
