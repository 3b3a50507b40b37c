package shards

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/router"
)

// The README's resharding, from 2 shards to 4: first the partitions double
// with p2 and p3 on the databases of p0 and p1 (nothing moves; status lists
// each job once, under the partition its calls go to), then p2 moves to a
// server of its own (a promoted standby of p0's), and each side deletes the
// other's tenants. Every job then finishes through the router, exactly once.
func TestReshardByPowersOfTwo(t *testing.T) {
	t.Parallel()
	s0, s1 := shardServers[0], shardServers[1]
	c := newCluster(t, []*localpg.Server{s0, s1})
	list := jobs(tenants(16), 1, 4)
	c.place(t, list, 2)
	for _, j := range list { // the first of two chunks, on 2 shards
		if _, err := router.RunChunk(ctx, c.router, j.tenant, j.id); err != nil {
			t.Fatal(err)
		}
	}

	c.reinstall(t, []*localpg.Server{s0, s1, s0, s1})
	status, err := fleet.Status(ctx, c.router)
	if err != nil || len(status) != len(list) {
		t.Fatalf("status with 4 partitions on 2 databases: %d jobs, %v; want %d", len(status), err, len(list))
	}
	moved := 0
	for _, s := range status {
		if want := c.shardOf(t, s.Tenant).name; s.Shard != want {
			t.Errorf("job %s of %s listed under %s; its calls go to %s", s.JobID, s.Tenant, s.Shard, want)
		}
		if s.Shard == "p2" {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no tenant of the 16 is in p2: nothing would move")
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
	waitFor(t, 30*time.Second, "the standby to replay p0's server", func() (bool, error) {
		var caught bool
		err := withConn(sb.DSN(), func(conn *pgx.Conn) error {
			return conn.QueryRow(ctx, "select pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&caught)
		})
		return err == nil && caught, err
	})
	if err := sb.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	c.reinstall(t, []*localpg.Server{s0, s1, sb, s1})
	for _, side := range []struct {
		server *localpg.Server
		drop   int // the partition whose tenants go
	}{{s0, 2}, {sb, 0}} {
		if err := withConn(side.server.DSN(), func(conn *pgx.Conn) error {
			// The README's three statements, for 4 partitions.
			_, err := conn.Exec(ctx, fmt.Sprintf(`
				delete from %[1]s.job_audit as a using %[1]s.jobs as j where a.job_id = j.job_id and hashtext(j.tenant) & 3 = %[2]d;
				delete from %[1]s.jobs where hashtext(tenant) & 3 = %[2]d;
				delete from %[1]s.job_progress as p where not exists (select from %[1]s.jobs as j where j.job_id = p.job_id);
				delete from %[1]s.orders where hashtext(tenant) & 3 = %[2]d;`, c.schema, side.drop))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}

	for _, j := range list { // the second chunk, on 4 partitions
		res, err := router.RunChunk(ctx, c.router, j.tenant, j.id)
		if err != nil || !res.Done || len(res.Processed) != 2 {
			t.Fatalf("run_chunk(%s, %s) after the move: %+v, %v; want the last 2 orders", j.tenant, j.id, res, err)
		}
	}
	c.checkExactlyOnce(t, list)
}
