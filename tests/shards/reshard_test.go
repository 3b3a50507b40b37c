package shards

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// docs/beyond-one-server.md's resharding, from 2 shards to 4: first the partitions double
// with p2 and p3 on the databases of p0 and p1 (nothing moves; status lists
// each job once, under the partition its calls go to), then p2 moves to a
// server of its own (a promoted standby of p0's), and each side deletes the
// other's tenants with the guide's statements. Every table that names a
// job has rows of both sides then: the audit, the queue, an undo's job_kind
// (one undone tenant on each side), campaigns and campaign_jobs (a campaign
// for every other tenant), and progress samples. No row of the other side's
// tenants is left on either, and every job, campaign job and undo then
// finishes through the router, exactly once.
func TestReshardByPowersOfTwo(t *testing.T) {
	t.Parallel()
	s0, s1 := shardServers[0], shardServers[1]
	c := newCluster(t, []*localpg.Server{s0, s1})
	partition := func(tenant string) int { // of 4
		var p int
		if err := c.router.QueryRow(ctx, "select hashtext($1) & 3", tenant).Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var plain, undone []string // undone: the first tenant of p0 (stays) and of p2 (moves)
	for _, tenant := range tenants(16) {
		if p := partition(tenant); (p == 0 || p == 2) && !slices.ContainsFunc(undone, func(u string) bool { return partition(u) == p }) {
			undone = append(undone, tenant)
		} else {
			plain = append(plain, tenant)
		}
	}
	if len(undone) != 2 || !slices.ContainsFunc(plain, func(p string) bool { return partition(p) == 2 }) {
		t.Fatalf("the 16 tenants have too few in p2 (undone %v): nothing would move", undone)
	}
	list := jobs(plain, 1, 4)
	c.place(t, list, 2)
	for _, j := range list { // the first of two chunks, on 2 shards
		if _, err := (driver.JobRef{Tenant: j.tenant, ID: j.id}).RunChunk(ctx, c.router, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A campaign of 2 orders for each plain tenant, made on its shard
	// (campaigns are not routed): one job, NAME-000001, not run yet.
	var campaignJobs []job
	for i, tenant := range plain {
		campaignJobs = append(campaignJobs, job{tenant: tenant, id: "c-" + tenant + "-000001", orders: []int64{int64(2001 + 2*i), int64(2002 + 2*i)}})
	}
	c.insertOrders(t, campaignJobs)
	for _, j := range campaignJobs {
		var ct driver.CampaignTargets
		for _, id := range j.orders {
			ct.Targets = append(ct.Targets, driver.Target{ID: id, Revision: 0, Qty: 1})
		}
		spec := driver.CampaignSpec{Name: strings.TrimSuffix(j.id, "-000001"), Tenant: j.tenant, ChunkSize: 2}
		if res, err := driver.CreateCampaign(ctx, c.shardOf(t, j.tenant).conn, spec, ct); err != nil || res.Jobs != 1 {
			t.Fatalf("campaign %s on the shard of %s: %+v, %v", spec.Name, j.tenant, res, err)
		}
	}
	// A job of 2 orders for each undone tenant, run to its end and undone:
	// the undo (job_kind: restore) is registered, not run yet.
	undoJobs := jobs(undone, 1, 2)
	for i := range undoJobs {
		undoJobs[i].orders = []int64{int64(1001 + 2*i), int64(1002 + 2*i)}
	}
	c.place(t, undoJobs, 2)
	for _, j := range undoJobs {
		if res, err := (driver.JobRef{Tenant: j.tenant, ID: j.id}).RunChunk(ctx, c.router, nil); err != nil || !res.Done {
			t.Fatalf("run_chunk(%s, %s): %+v, %v", j.tenant, j.id, res, err)
		}
		if u, err := (driver.JobRef{Tenant: j.tenant, ID: j.id}).RegisterUndo(ctx, c.router, ""); err != nil || len(u.Targets) != 2 {
			t.Fatalf("register_undo(%s, %s): %+v, %v", j.tenant, j.id, u, err)
		}
	}
	// Progress samples of every job, as the shards' workers' heartbeats record them.
	for _, sh := range c.shards {
		if _, err := sh.conn.Exec(ctx, `select record_progress(jsonb_agg(jsonb_build_object('job_id', job_id,
			'next_index', next_index, 'ago_ms', 0))) from jobs`); err != nil {
			t.Fatal(err)
		}
	}

	c.reinstall(t, []*localpg.Server{s0, s1, s0, s1})
	status, err := fleet.Status(ctx, c.router)
	if want := len(list) + len(campaignJobs) + 2*len(undoJobs); err != nil || len(status) != want {
		t.Fatalf("status with 4 partitions on 2 databases: %d jobs, %v; want %d", len(status), err, want)
	}
	for _, s := range status {
		if want := c.shardOf(t, s.Tenant).name; s.Shard != want {
			t.Errorf("job %s of %s listed under %s; its calls go to %s", s.JobID, s.Tenant, s.Shard, want)
		}
	}

	sb, err := s0.StartStandby(ctx, localpg.StandbyOptions{Name: "p2-copy"})
	if err != nil {
		t.Fatalf("standby of p0's server: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Stop(); err != nil {
			t.Error(err)
		}
	})
	var lsn string
	if err := c.shards[0].conn.QueryRow(ctx, "select pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitFor(t, 30*time.Second, "the standby to replay p0's server", untilOK(t, func() (bool, error) {
		var caught bool
		err := pgtest.WithConn(sb.DSN(), func(conn *pgx.Conn) error {
			return conn.QueryRow(ctx, "select pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&caught)
		})
		return err == nil && caught, err
	}))
	if err := sb.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	c.reinstall(t, []*localpg.Server{s0, s1, sb, s1})
	blocks := pgtest.DocBlocks(t, "<!-- tests/shards TestReshardByPowersOfTwo", "beyond-one-server.md")
	if len(blocks) != 1 || !strings.Contains(blocks[0], "& 7 = 5") {
		t.Fatalf("docs: %d blocks marked for TestReshardByPowersOfTwo, want 1 (the deletes of p5 of 8): %q", len(blocks), blocks)
	}
	for _, side := range []struct {
		server *localpg.Server
		drop   int // the partition whose tenants go
	}{{s0, 2}, {sb, 0}} {
		counts := func(conn *pgx.Conn) []int {
			t.Helper()
			n := make([]int, 7)
			if err := conn.QueryRow(ctx, `select
				(select count(*) from jobs where hashtext(tenant) & 3 = $1),
				(select count(*) from job_audit as a join jobs as j using (job_id) where hashtext(j.tenant) & 3 = $1),
				(select count(*) from job_kind as k join jobs as j using (job_id) where hashtext(j.tenant) & 3 = $1),
				(select count(*) from campaign_jobs as cj join jobs as j using (job_id) where hashtext(j.tenant) & 3 = $1),
				(select count(*) from campaigns where hashtext(tenant) & 3 = $1),
				(select count(*) from job_progress as p where not exists (select from jobs as j where j.job_id = p.job_id
				                                                            and hashtext(j.tenant) & 3 <> $1)),
				(select count(*) from orders where hashtext(tenant) & 3 = $1)`, side.drop).
				Scan(&n[0], &n[1], &n[2], &n[3], &n[4], &n[5], &n[6]); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if err := pgtest.WithConn(pgtest.WithSearchPath(side.server.DSN(), c.schema), func(conn *pgx.Conn) error {
			if before := counts(conn); slices.Contains(before, 0) {
				t.Errorf("p%d's rows before the deletes (jobs, audit, job_kind, campaign_jobs, campaigns, progress, orders): %v; want some of each",
					side.drop, before)
			}
			sql := strings.ReplaceAll(strings.ReplaceAll(blocks[0], "lab.", c.schema+"."), "& 7 = 5", fmt.Sprintf("& 3 = %d", side.drop))
			if _, err := conn.Exec(ctx, sql); err != nil {
				return fmt.Errorf("the guide's deletes of p%d: %w", side.drop, err)
			}
			if after := counts(conn); slices.ContainsFunc(after, func(n int) bool { return n != 0 }) {
				t.Errorf("p%d's rows after the deletes: %v; want none", side.drop, after)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}

	for _, j := range append(list, campaignJobs...) { // the last chunk, on 4 partitions
		res, err := driver.JobRef{Tenant: j.tenant, ID: j.id}.RunChunk(ctx, c.router, nil)
		if err != nil || !res.Done || len(res.Processed) != 2 {
			t.Fatalf("run_chunk(%s, %s) after the move: %+v, %v; want the last 2 orders", j.tenant, j.id, res, err)
		}
	}
	for _, j := range campaignJobs {
		spec := strings.TrimSuffix(j.id, "-000001")
		if s, err := driver.CampaignStatus(ctx, c.shardOf(t, j.tenant).conn, spec); err != nil || s.Tenant != j.tenant {
			t.Errorf("campaign %s on the shard of %s after the move: %+v, %v", spec, j.tenant, s, err)
		}
	}
	for _, j := range undoJobs {
		undo := j.id + "-undo"
		if _, err := driver.DrainConfig(ctx, c.router.Config(), driver.JobRef{Tenant: j.tenant, ID: undo}, 64, nil); err != nil {
			t.Fatalf("drain(%s, %s) after the move: %v", j.tenant, undo, err)
		}
		r, err := driver.JobRef{Tenant: j.tenant, ID: undo}.Report(ctx, c.router)
		if err != nil || !slices.Equal(r.Matching, j.orders) || len(r.Remaining) != 0 {
			t.Errorf("report(%s, %s) after the move: %+v, %v; want %v matching (pending again)", j.tenant, undo, r, err, j.orders)
		}
		if l, err := (driver.JobRef{Tenant: j.tenant, ID: j.id}).Lineage(ctx, c.router); err != nil || l == nil || l.UndoneBy == nil || *l.UndoneBy != undo {
			t.Errorf("job_lineage(%s, %s) after the move: %+v, %v; want undone by %s", j.tenant, j.id, l, err, undo)
		}
	}
	c.checkExactlyOnce(t, append(list, campaignJobs...), undone...)
}
