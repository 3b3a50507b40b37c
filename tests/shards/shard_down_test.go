package shards

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// One shard is SIGKILLed (every server process at once) in the middle of
// a drain by the workers of every shard. The other shards' jobs finish.
// Through the router, every call for a tenant of the dead shard fails with
// 08006 naming it, status too, and calls for the other tenants go on. Once
// the shard is restarted, its worker finishes its jobs, and every job of
// every shard has changed each order exactly once.
func TestShardKilledMidDrain(t *testing.T) {
	t.Parallel()
	c := newCluster(t, []*localpg.Server{shardServers[0], shardServers[1], shardServers[2], spareServer})
	dead := c.shards[3]
	list := jobs(tenants(40), 2, 8)
	c.place(t, list, 2) // 4 chunks a job
	var deadTenant, liveTenant job
	for _, j := range list {
		if c.shardOf(t, j.tenant) == dead {
			deadTenant = j
		} else {
			liveTenant = j
		}
	}
	if deadTenant.id == "" {
		t.Fatal("no tenant on the shard to kill")
	}
	c.startWorkers(t, 2, 5) // a job rests 200 ms after each chunk: the drain takes a while

	pgtest.WaitFor(t, 30*time.Second, "some but not all of the doomed shard's chunks committed", untilOK(t, func() (bool, error) {
		var done, all int
		err := pgtest.WithConn(dead.dsn, func(conn *pgx.Conn) error {
			return conn.QueryRow(ctx, "select sum(next_index), sum(jsonb_array_length(targets)) from jobs").Scan(&done, &all)
		})
		return err == nil && done > 0 && done < all, err
	}))
	if err := dead.server.Kill(); err != nil {
		t.Fatalf("kill shard %s: %v", dead.name, err)
	}

	for _, sh := range c.shards[:3] {
		pgtest.WaitFor(t, 30*time.Second, "shard "+sh.name+"'s jobs done with "+dead.name+" down", untilOK(t, sh.allDone))
	}
	unavailable := func(what string, err error) {
		t.Helper()
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "08006" || !clitest.ContainsAll(pgErr.Message, "shard "+dead.name+" is unavailable: ", "connection") {
			t.Errorf("%s with shard %s down: %v; want 08006 naming the shard", what, dead.name, err)
		}
	}
	_, err := driver.JobRef{Tenant: deadTenant.tenant, ID: deadTenant.id}.RunChunk(ctx, c.router, nil)
	unavailable("run_chunk", err)
	_, err = driver.JobRef{Tenant: deadTenant.tenant, ID: deadTenant.id}.Inspect(ctx, c.router)
	unavailable("inspect_job", err)
	_, err = driver.Register(ctx, c.router, job2(deadTenant.tenant, "late", 9999))
	unavailable("register", err)
	_, err = fleet.Status(ctx, c.router)
	unavailable("job_status", err)
	if job, err := (driver.JobRef{Tenant: liveTenant.tenant, ID: liveTenant.id}).Inspect(ctx, c.router); err != nil || job == nil || job.NextIndex != 8 {
		t.Errorf("inspect_job of %s on a live shard: %+v, %v; want it, done", liveTenant.tenant, job, err)
	}

	if err := dead.server.Restart(ctx); err != nil {
		t.Fatalf("restart shard %s: %v", dead.name, err)
	}
	dead.conn = pgtest.Connect(t, dead.dsn)
	pgtest.WaitFor(t, 30*time.Second, "every job done, seen through the router", untilOK(t, func() (bool, error) {
		list, err := fleet.Status(ctx, c.router) // the router's old connection to the shard fails once
		for _, j := range list {
			if j.State != fleet.StateDone {
				return false, nil
			}
		}
		return err == nil && len(list) == 80, err
	}))
	c.checkExactlyOnce(t, list)
	res, err := driver.JobRef{Tenant: deadTenant.tenant, ID: deadTenant.id}.RunChunk(ctx, c.router, nil)
	if err != nil || !res.Done || len(res.Processed) != 0 || res.NextIndex != 8 {
		t.Errorf("run_chunk of a finished job after the restart: %+v, %v; want done, nothing processed", res, err)
	}
}
