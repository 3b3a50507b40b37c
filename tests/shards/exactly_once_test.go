package shards

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
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
	pgtest.WaitFor(t, 30*time.Second, "a live worker on every shard, seen through the router", untilOK(t, func() (bool, error) {
		var err error
		workers, err = fleet.Workers(ctx, c.router)
		return len(workers) == 4, err
	}))
	for i, w := range workers {
		if want := fmt.Sprint("p", i); w.Shard != want || w.WorkerID != "worker-"+want {
			t.Errorf("worker %d through the router: shard %q, id %q; want %s, worker-%s", i, w.Shard, w.WorkerID, want, want)
		}
	}
	pgtest.WaitFor(t, 60*time.Second, "every shard's jobs done", untilOK(t, func() (bool, error) {
		for _, sh := range c.shards {
			if done, err := sh.allDone(); !done {
				return false, err
			}
		}
		return true, nil
	}))
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

	// The status page through the router: a page of 10, then the rest after it.
	first, err := fleet.LoadOverview(ctx, c.router, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Jobs) != 10 || !first.More || first.Jobs[9].JobID != strings.Fields(want[9])[0] ||
		first.Counts[fleet.StateDone] != 200 || len(first.Counts) != 1 || first.UnfinishedOrders != 0 || len(first.Workers) != 4 {
		t.Errorf("the first page through the router: %d jobs (more %v, the last %s), counts %v, %d orders left, %d workers; "+
			"want 10 (more, the last %s), 200 done, 0 left, 4 workers", len(first.Jobs), first.More, first.Jobs[len(first.Jobs)-1].JobID,
			first.Counts, first.UnfinishedOrders, len(first.Workers), strings.Fields(want[9])[0])
	}
	rest, err := fleet.LoadOverview(ctx, c.router, first.Jobs[len(first.Jobs)-1].JobID, 0)
	if err != nil || len(rest.Jobs) != 190 || rest.More || rest.Jobs[0].JobID != strings.Fields(want[10])[0] {
		t.Errorf("the rest through the router: %d jobs, more %v, %v; want 190 from %s", len(rest.Jobs), rest.More, err, strings.Fields(want[10])[0])
	}
}
