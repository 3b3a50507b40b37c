package shards

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/fleet"
)

// 200 jobs of 40 tenants, registered through the router, drained by a
// worker on every shard (each connected to its shard only): every job ends
// on its tenant's shard with every order changed exactly once and its audit
// equal to its targets, checked shard by shard. Through the router, status
// shows all 200 jobs and the four workers, each with its shard.
func TestExactlyOnceWorkersOnEveryShard(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers)
	list := jobs(tenants(40), 5, 7) // 3 chunks of up to 3 each
	c.place(t, list, 3)
	c.startWorkers(t, 2, 0)

	var workers []fleet.WorkerStatus
	waitFor(t, 30*time.Second, "a live worker on every shard, seen through the router", func() (bool, error) {
		var err error
		workers, err = fleet.Workers(ctx, c.router)
		return len(workers) == 4, err
	})
	for i, w := range workers {
		if want := fmt.Sprint("p", i); w.Shard != want || w.WorkerID != "worker-"+want {
			t.Errorf("worker %d through the router: shard %q, id %q; want %s, worker-%s", i, w.Shard, w.WorkerID, want, want)
		}
	}
	waitFor(t, 60*time.Second, "every shard's jobs done", func() (bool, error) {
		for _, sh := range c.shards {
			if done, err := sh.allDone(); !done {
				return false, err
			}
		}
		return true, nil
	})
	c.checkExactlyOnce(t, list)

	status, err := fleet.Status(ctx, c.router)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, s := range status {
		got = append(got, s.JobID+" "+s.Shard+" "+s.Tenant+" "+s.State)
	}
	for _, j := range list {
		want = append(want, j.id+" "+c.shardOf(t, j.tenant).name+" "+j.tenant+" done")
	}
	slices.Sort(want) // by job id (then shard: job ids are unique here)
	if !slices.Equal(got, want) {
		t.Errorf("status through the router:\n%v\nwant\n%v", got, want)
	}
}
