package shards

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// Every row of a tenant is on the shard hashtext(tenant) & 3 picks, and on
// no other: the jobs, audit and queue rows that chunks writes through the
// router, next to the orders the application put there. The rule is
// PL/Proxy's, computed here on a shard's own server, not by the router.
func TestPlacement(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers)
	list := jobs(tenants(40), 1, 4)
	c.place(t, list, 2)
	for _, j := range list[:20] { // half of them run one chunk through the router
		res, err := driver.JobRef{Tenant: j.tenant, ID: j.id}.RunChunk(ctx, c.router, nil)
		if err != nil || len(res.Processed) != 2 || res.Done {
			t.Fatalf("run_chunk(%s, %s): %+v, %v", j.tenant, j.id, res, err)
		}
	}
	used := map[string]int{}
	for _, j := range list {
		var want string
		if err := c.shards[0].conn.QueryRow(ctx, "select 'p' || (hashtext($1) & 3)", j.tenant).Scan(&want); err != nil {
			t.Fatal(err)
		}
		sh := c.shardOf(t, j.tenant)
		if sh.name != want {
			t.Fatalf("shard_of(%s) = %s; hashtext(tenant) & 3 says %s", j.tenant, sh.name, want)
		}
		used[sh.name]++
	}
	if len(used) != 4 {
		t.Fatalf("40 tenants used the shards %v; want all four", used)
	}
	for _, sh := range c.shards {
		rows, err := sh.conn.Query(ctx, `
			select 'jobs', tenant from jobs
			union all select 'job_audit', j.tenant from job_audit as a join jobs as j using (job_id)
			union all select 'job_queue', j.tenant from job_queue as q join jobs as j using (job_id)
			union all select 'orders', tenant from orders`)
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for rows.Next() {
			var table, tenant string
			if err := rows.Scan(&table, &tenant); err != nil {
				t.Fatal(err)
			}
			if got := c.shardOf(t, tenant); got != sh {
				t.Errorf("shard %s holds a row of %s of tenant %s, whose shard is %s", sh.name, table, tenant, got.name)
			}
			count[table]++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		// 4 orders a job; half the jobs have 2 audit rows; unfinished jobs are queued.
		n := used[sh.name]
		if count["jobs"] != n || count["orders"] != 4*n || count["job_queue"] != n {
			t.Errorf("shard %s: %v; want %d jobs, %d orders, %d queue rows", sh.name, count, n, 4*n, n)
		}
	}
	audit := 0
	for _, sh := range c.shards {
		var n int
		if err := sh.conn.QueryRow(ctx, "select count(*) from job_audit").Scan(&n); err != nil {
			t.Fatal(err)
		}
		audit += n
	}
	if audit != 40 {
		t.Errorf("%d audit rows on all shards; want 40 (2 for each of 20 chunks)", audit)
	}
}

// A job id is unique per shard only: two tenants on two shards may both
// have job "spring", and each call of the tenant finds its own. On one
// shard, the second tenant's register is a conflict, and a call naming a
// tenant whose shard holds another tenant's job of that id finds nothing.
func TestJobIDsPerShard(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers)
	byShard := map[string][]string{}
	for _, tenant := range tenants(40) {
		sh := c.shardOf(t, tenant).name
		byShard[sh] = append(byShard[sh], tenant)
	}
	a, b, a2 := byShard["p0"][0], byShard["p1"][0], byShard["p0"][1] // a and a2 share shard p0
	list := []job{{tenant: a, id: "spring", orders: []int64{1, 2}}, {tenant: b, id: "spring", orders: []int64{3, 4}}}
	c.place(t, list, 1)

	res, err := driver.JobRef{Tenant: b, ID: "spring"}.RunChunk(ctx, c.router, nil)
	if err != nil || fmt.Sprint(res.Processed) != "[3]" {
		t.Fatalf("run_chunk(%s, spring): %+v, %v; want order 3", b, res, err)
	}
	job, err := driver.JobRef{Tenant: a, ID: "spring"}.Inspect(ctx, c.router)
	if err != nil || job == nil || job.Tenant != a || job.NextIndex != 0 {
		t.Fatalf("inspect_job(%s, spring) = %+v, %v; want %s's, untouched", a, job, err, a)
	}

	_, err = driver.Register(ctx, c.router, job2(a2, "spring", 9))
	if !errors.Is(err, driver.ErrConflict) || !clitest.ContainsAll(err.Error(), `job spring: already registered for tenant "`+a+`"`) {
		t.Fatalf("register spring of %s on %s's shard: %v; want a conflict naming %s", a2, a, err, a)
	}
	_, err = driver.JobRef{Tenant: a2, ID: "spring"}.RunChunk(ctx, c.router, nil)
	var pgErr *pgconn.PgError
	if !errors.Is(err, driver.ErrConflict) || !errors.As(err, &pgErr) || pgErr.Message != "job spring: not found for tenant "+a2 {
		t.Fatalf("run_chunk(%s, spring): %v; want job spring: not found for tenant %s", a2, err, a2)
	}
	if job, err := (driver.JobRef{Tenant: a2, ID: "spring"}).Inspect(ctx, c.router); err != nil || job != nil {
		t.Fatalf("inspect_job(%s, spring) = %+v, %v; want nil", a2, job, err)
	}
	for _, call := range []func() error{
		func() error { _, err := driver.JobRef{Tenant: a2, ID: "spring"}.Report(ctx, c.router); return err },
		func() error {
			_, err := fleet.Pause(ctx, c.router, driver.JobRef{Tenant: a2, ID: "spring"})
			return err
		},
		func() error {
			_, err := fleet.Resume(ctx, c.router, driver.JobRef{Tenant: a2, ID: "spring"})
			return err
		},
	} {
		if err := call(); !errors.Is(err, driver.ErrConflict) || !clitest.ContainsAll(err.Error(), "not found for tenant "+a2) {
			t.Errorf("a call of %s's job spring as %s: %v; want not found for tenant %s", a, a2, err, a2)
		}
	}
	var next int
	if err := c.shards[0].conn.QueryRow(ctx, "select next_index from jobs where job_id = 'spring'").Scan(&next); err != nil || next != 0 {
		t.Fatalf("%s's spring on p0: next_index %d, %v; want 0 (nothing ran)", a, next, err)
	}
}

// job2 is a one-target plan.
func job2(tenant, id string, order int64) driver.Plan {
	return job{tenant: tenant, id: id, orders: []int64{order}}.plan(1)
}
