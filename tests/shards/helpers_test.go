package shards

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/chunktx"
	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
	"github.com/chunks-dev/chunks/router"
)

// requirePlproxy skips the test (or fails it, under CI) when the router's
// server has no plproxy.
func requirePlproxy(t testing.TB) {
	t.Helper()
	pgtest.RequireTool(t, noPlproxy, "plproxy", plproxyPackage)
}

// cluster is a test's own router and shards: a fresh schema, migrated on
// every shard server, and a router installed in a schema of the same name
// on the router's server (its PL/Proxy cluster is chunks_<schema>).
type cluster struct {
	schema    string
	routerDSN string    // the router's database, with search_path = schema
	router    *pgx.Conn // on routerDSN
	shards    []*shard  // in partition order
}

// shard is one shard of a cluster.
type shard struct {
	name   string // p0, p1, ...
	server *localpg.Server
	dsn    string    // the shard's database, with search_path = the schema
	conn   *pgx.Conn // on dsn
}

// newCluster makes a cluster over servers (in partition order) and drops
// all of it when the test ends.
func newCluster(t testing.TB, servers []*localpg.Server) *cluster {
	t.Helper()
	requirePlproxy(t)
	schema := pgtest.NewSchemaName(t)
	c := &cluster{schema: schema}
	var wg sync.WaitGroup
	errs := make([]error, len(servers))
	for i, s := range servers {
		c.shards = append(c.shards, &shard{name: fmt.Sprint("p", i), server: s, dsn: pgtest.WithSearchPath(s.DSN(), schema)})
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = pgtest.WithConn(s.DSN(), func(conn *pgx.Conn) error { return driver.Migrate(ctx, conn, schema, driver.MigrateOptions{}) })
		}()
	}
	wg.Wait()
	t.Cleanup(func() { // on these servers: a server added later by a reshard is the test's own
		for i, s := range servers {
			if err := pgtest.WithConn(s.DSN(), func(conn *pgx.Conn) error {
				_, err := conn.Exec(ctx, "drop schema if exists "+schema+" cascade")
				return err
			}); err != nil {
				t.Errorf("drop %s on shard p%d: %v", schema, i, err)
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("migrate the shards: %v", err)
	}
	admin := pgtest.Connect(t, routerServer.DSN())
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "drop schema if exists "+schema+" cascade; drop server if exists "+router.Cluster(schema)+" cascade"); err != nil {
			t.Errorf("drop the router %s: %v", schema, err)
		}
	})
	var dsns []string
	for _, s := range servers {
		dsns = append(dsns, s.DSN())
	}
	if err := router.Install(ctx, admin, router.Config{Schema: schema, Shards: dsns}); err != nil {
		t.Fatalf("router install: %v", err)
	}
	c.routerDSN = pgtest.WithSearchPath(routerServer.DSN(), schema)
	c.router = pgtest.Connect(t, c.routerDSN)
	for _, sh := range c.shards {
		sh.conn = pgtest.Connect(t, sh.dsn)
	}
	return c
}

// reinstall runs router install again with servers as the partitions (a
// reshard); a server may serve several partitions.
func (c *cluster) reinstall(t *testing.T, servers []*localpg.Server) {
	t.Helper()
	conns := map[*localpg.Server]*pgx.Conn{}
	for _, sh := range c.shards {
		conns[sh.server] = sh.conn
	}
	var dsns []string
	c.shards = nil
	for i, s := range servers {
		dsns = append(dsns, s.DSN())
		sh := &shard{name: fmt.Sprint("p", i), server: s, dsn: pgtest.WithSearchPath(s.DSN(), c.schema), conn: conns[s]}
		if sh.conn == nil {
			sh.conn = pgtest.Connect(t, sh.dsn)
			conns[s] = sh.conn
		}
		c.shards = append(c.shards, sh)
	}
	admin := pgtest.Connect(t, routerServer.DSN())
	if err := router.Install(ctx, admin, router.Config{Schema: c.schema, Shards: dsns}); err != nil {
		t.Fatalf("router install again: %v", err)
	}
}

// runChunks runs the chunks binary and returns what it printed, stdout
// then stderr; the test fails unless it exits wantCode.
func runChunks(t *testing.T, wantCode int, args ...string) string {
	t.Helper()
	r := clitest.Run(t, args...)
	if r.Code != wantCode {
		t.Fatalf("want exit %d, got %v", wantCode, r)
	}
	return r.Stdout + r.Stderr
}

// shardOf is the shard of tenant, as the router names it.
func (c *cluster) shardOf(t testing.TB, tenant string) *shard {
	t.Helper()
	name, err := router.ShardOf(ctx, c.router, tenant)
	if err != nil {
		t.Fatalf("shard_of(%s): %v", tenant, err)
	}
	for _, sh := range c.shards {
		if sh.name == name {
			return sh
		}
	}
	t.Fatalf("shard_of(%s) = %q, not one of the %d shards", tenant, name, len(c.shards))
	return nil
}

// job is a job of a test: its tenant, id and targets (orders of qty 1 at
// revision 0).
type job struct {
	tenant, id string
	orders     []int64
}

// plan is the job's approval.
func (j job) plan(chunkSize int) driver.Plan {
	p := driver.Plan{JobID: j.id, Tenant: j.tenant, ChunkSize: chunkSize, AllowPartial: true}
	for _, id := range j.orders {
		p.Targets = append(p.Targets, driver.Target{ID: id, Revision: 0, Qty: 1})
	}
	return p
}

// jobs is n jobs for each of the tenants, of perJob orders each, with ids
// unique across the whole cluster; job ids carry their tenant.
func jobs(tenants []string, n, perJob int) []job {
	var out []job
	next := int64(1)
	for _, tenant := range tenants {
		for k := range n {
			j := job{tenant: tenant, id: fmt.Sprintf("%s-j%d", tenant, k)}
			for range perJob {
				j.orders = append(j.orders, next)
				next++
			}
			out = append(out, j)
		}
	}
	return out
}

// tenants is n tenant names.
func tenants(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("tenant-%02d", i)
	}
	return out
}

// place inserts every job's orders, pending, on its tenant's shard (as an
// application places them), and registers the jobs through the router.
func (c *cluster) place(t testing.TB, list []job, chunkSize int) {
	t.Helper()
	c.insertOrders(t, list)
	for _, j := range list {
		created, err := driver.Register(ctx, c.router, j.plan(chunkSize))
		if err != nil || !created {
			t.Fatalf("register %s of %s through the router: %v, %v", j.id, j.tenant, created, err)
		}
	}
}

// insertOrders inserts every job's orders, pending, on its tenant's shard.
func (c *cluster) insertOrders(t testing.TB, list []job) {
	t.Helper()
	byShard := map[*shard][]job{}
	for _, j := range list {
		sh := c.shardOf(t, j.tenant)
		byShard[sh] = append(byShard[sh], j)
	}
	for sh, js := range byShard {
		var ids []int64
		var owners []string
		for _, j := range js {
			for _, id := range j.orders {
				ids, owners = append(ids, id), append(owners, j.tenant)
			}
		}
		if _, err := sh.conn.Exec(ctx, `insert into orders (id, tenant, qty, state, revision)
			select id, tenant, 1, 'pending', 0 from unnest($1::integer[], $2::text[]) as o(id, tenant)`, ids, owners); err != nil {
			t.Fatalf("orders on shard %s: %v", sh.name, err)
		}
	}
}

// checkExactlyOnce proves, shard by shard, that every job of list is done
// and changed each of its orders exactly once: the shard holds exactly the
// jobs and orders of its own tenants, every job's next_index is its number
// of targets, its audit rows are exactly its targets (revision 0 -> 1), and
// every order is cancelled at revision 1. A database that
// serves several partitions is checked once, for all of their tenants. The
// jobs and orders of the tenants in others are left out (the caller checks
// them).
func (c *cluster) checkExactlyOnce(t *testing.T, list []job, others ...string) {
	t.Helper()
	others = append([]string{}, others...) // never NULL: = any(NULL) is no row
	for _, j := range list {
		if slices.Contains(others, j.tenant) {
			t.Fatalf("checkExactlyOnce: tenant %s is in list and in others", j.tenant)
		}
	}
	checked := map[string]bool{}
	for _, sh := range c.shards {
		if checked[sh.dsn] {
			continue
		}
		checked[sh.dsn] = true
		var want []string
		wantOrders := 0
		for _, j := range list {
			if c.shardOf(t, j.tenant).dsn == sh.dsn {
				want = append(want, j.tenant+"/"+j.id)
				wantOrders += len(j.orders)
			}
		}
		slices.Sort(want)
		rows, err := sh.conn.Query(ctx, `
			select j.tenant || '/' || j.job_id,
			       j.next_index = jsonb_array_length(j.targets)
			       and (select count(*) from job_audit as a where a.job_id = j.job_id) = jsonb_array_length(j.targets)
			       and not exists (select from job_audit as a
			                        where a.job_id = j.job_id
			                          and (a.id, a.previous_revision, a.new_revision, a.qty)
			                              is distinct from (((j.targets -> a.ordinal) ->> 'id')::integer, 0, 1, 1))
			  from jobs as j where not (j.tenant = any($1)) order by 1`, others)
		if err != nil {
			t.Fatalf("shard %s: %v", sh.name, err)
		}
		var got, unsound []string
		for rows.Next() {
			var name string
			var sound bool
			if err := rows.Scan(&name, &sound); err != nil {
				t.Fatalf("shard %s: %v", sh.name, err)
			}
			got = append(got, name)
			if !sound {
				unsound = append(unsound, name)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("shard %s: %v", sh.name, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("shard %s holds the jobs %v, want %v", sh.name, got, want)
		}
		if len(unsound) > 0 {
			t.Errorf("shard %s: jobs not done exactly once (next_index, audit = targets): %v", sh.name, unsound)
		}
		var orders, once int
		if err := sh.conn.QueryRow(ctx, `select count(*), count(*) filter (where state = 'cancelled' and revision = 1)
			from orders where not (tenant = any($1))`, others).Scan(&orders, &once); err != nil {
			t.Fatalf("shard %s: %v", sh.name, err)
		}
		if orders != wantOrders || once != wantOrders {
			t.Errorf("shard %s: %d orders, %d cancelled exactly once; want %d, %d", sh.name, orders, once, wantOrders, wantOrders)
		}
	}
}

// worker is a fleet worker serving one shard, connected to it directly.
type worker struct {
	shard *shard
	stop  func()
	done  chan error
	log   clitest.Output // safe for the handler's concurrent writes
}

// Write keeps the worker's log.
func (w *worker) Write(p []byte) (int, error) { return w.log.Write(p) }

// startWorkers starts one worker per shard; they stop when the test ends.
func (c *cluster) startWorkers(t *testing.T, concurrency int, rate float64) []*worker {
	t.Helper()
	var out []*worker
	t.Cleanup(func() { // all at once: a worker takes a moment to stop
		for _, w := range out {
			w.stop()
		}
		for _, w := range out {
			if err := <-w.done; err != nil {
				t.Errorf("worker of shard %s: %v\n%s", w.shard.name, err, w.logText())
			}
		}
	})
	for _, sh := range c.shards {
		cfg, err := pgxpool.ParseConfig(sh.dsn)
		if err != nil {
			t.Fatal(err)
		}
		chunktx.CancelOnContext(&cfg.ConnConfig.Config)
		cfg.ConnConfig.RuntimeParams["application_name"] = "worker-" + sh.name
		cfg.MaxConns = int32(concurrency)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		w := &worker{shard: sh, done: make(chan error, 1)}
		fw := &fleet.Worker{Pool: pool, ID: "worker-" + sh.name, Concurrency: concurrency, Poll: 20 * time.Millisecond,
			RetryDelay: 50 * time.Millisecond, Rate: rate, Logger: slog.New(slog.NewTextHandler(w, nil))}
		if err := fw.Start(ctx); err != nil {
			pool.Close()
			t.Fatalf("worker of shard %s: %v\n%s", sh.name, err, w.logText())
		}
		w.stop = func() { go func() { w.done <- fw.Stop(ctx); pool.Close() }() }
		out = append(out, w)
	}
	return out
}

func (w *worker) logText() string { return w.log.String() }

// untilOK turns cond, which may fail to find out, into pgtest.WaitFor's
// test: each new error is logged, so that a wait that runs out says what
// stood in the way.
func untilOK(t *testing.T, cond func() (bool, error)) func() bool {
	var last string
	return func() bool {
		ok, err := cond()
		if err != nil && err.Error() != last {
			last = err.Error()
			t.Logf("waiting: %v", err)
		}
		return ok
	}
}

// allDone says whether every job of the shard is done (read on the shard).
func (sh *shard) allDone() (bool, error) {
	list, err := fleet.Status(ctx, sh.conn)
	if err != nil {
		return false, err
	}
	for _, j := range list {
		if j.State != fleet.StateDone {
			return false, nil
		}
	}
	return true, nil
}
