package shards

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// BenchmarkRouter measures, in one run, what the router costs and what it
// carries, on the package's loopback servers (non-durable: a commit costs
// no disk flush here, so the router's share is the larger). It asserts
// nothing about speed; BENCHMARKS.md shows this machine's figures.
//
//	go test -run '^$' -bench Router -benchtime 2000x ./tests/shards/
//
// call=inspect_job and call=run_chunk make one call on the shard itself
// (direct) and one through the router (router) per iteration, side by side:
// direct-µs/call and router-µs/call are their means, and extra-µs/call is
// the router's cost per call. chunks are 8 clients,
// each on a connection of its own, running chunks of jobs spread over 16
// tenants, on one shard directly (direct) and through routers of 1, 2 and 4
// shards: chunks/s is the total.
func BenchmarkRouter(b *testing.B) {
	requirePlproxy(b)
	clusters := map[int]*cluster{}
	for _, n := range []int{1, 2, 4} {
		clusters[n] = newCluster(b, shardServers[:n])
	}
	c := clusters[4]
	tenant := "acme"
	sh := c.shardOf(b, tenant)

	b.Run("call=inspect_job", func(b *testing.B) {
		j := fresh(b, c, []string{tenant}, 1)[0]
		pairedCalls(b, func(int) error {
			_, err := driver.InspectJob(ctx, sh.conn, j.id)
			return err
		}, func(int) error {
			_, err := driver.JobRef{Tenant: tenant, ID: j.id}.Inspect(ctx, c.router)
			return err
		})
	})
	b.Run("call=run_chunk", func(b *testing.B) {
		direct, routed := fresh(b, c, []string{tenant}, b.N), fresh(b, c, []string{tenant}, b.N)
		pairedCalls(b, func(i int) error {
			_, err := driver.RunChunk(ctx, sh.conn, direct[i/64].id, nil)
			return err
		}, func(i int) error {
			_, err := driver.JobRef{Tenant: tenant, ID: routed[i/64].id}.RunChunk(ctx, c.router, nil)
			return err
		})
	})
	b.Run("chunks/direct", func(b *testing.B) {
		list := fresh(b, clusters[1], tenants(16), b.N)
		b.ResetTimer()
		parallelChunks(b, clusters[1].shards[0].dsn, list, func(conn *pgx.Conn, j job) error {
			_, err := driver.RunChunk(ctx, conn, j.id, nil)
			return err
		})
	})
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("chunks/router/shards=%d", n), func(b *testing.B) {
			list := fresh(b, clusters[n], tenants(16), b.N)
			b.ResetTimer()
			parallelChunks(b, clusters[n].routerDSN, list, func(conn *pgx.Conn, j job) error {
				_, err := driver.JobRef{Tenant: j.tenant, ID: j.id}.RunChunk(ctx, conn, nil)
				return err
			})
		})
	}
}

// pairedCalls makes b.N calls of each, one direct then one routed, so that
// the machine's other load weighs on both alike, and reports each one's
// mean and the difference: the router's cost per call.
func pairedCalls(b *testing.B, direct, routed func(i int) error) {
	var onShard, viaRouter time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if err := direct(i); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := routed(i); err != nil {
			b.Fatal(err)
		}
		onShard, viaRouter = onShard+t1.Sub(t0), viaRouter+time.Since(t1)
	}
	b.ReportMetric(float64(onShard.Microseconds())/float64(b.N), "direct-µs/call")
	b.ReportMetric(float64(viaRouter.Microseconds())/float64(b.N), "router-µs/call")
	b.ReportMetric(float64((viaRouter-onShard).Microseconds())/float64(b.N), "extra-µs/call")
}

// parallelChunks runs b.N chunks of list's jobs (64 chunks each) with 8
// clients on connections of their own to dsn, and reports chunks/s.
func parallelChunks(b *testing.B, dsn string, list []job, run func(*pgx.Conn, job) error) {
	const clients = 8
	conns := make([]*pgx.Conn, clients)
	for i := range conns {
		conns[i] = pgtest.Connect(b, dsn)
	}
	b.ResetTimer()
	var next atomic.Int64 // the next chunk to run: job next/64
	var wg sync.WaitGroup
	errs := make([]error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each client takes whole jobs, so that no two wait for one job's row.
			for {
				k := int(next.Add(64)) - 64
				if k >= b.N {
					return
				}
				for c := k; c < min(k+64, b.N); c++ {
					if errs[i] = run(conns[i], list[c/64]); errs[i] != nil {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "chunks/s")
}

// freshIDs numbers the benchmark's jobs and orders across its runs: a
// shard takes each job id and order id once.
var freshIDs atomic.Int64

// fresh registers enough new jobs of 64 one-order chunks for chunks
// chunks (at least one job), spread over tenants, with their orders in
// place.
func fresh(b *testing.B, c *cluster, tenants []string, chunks int) []job {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	var list []job
	for i := 0; i < max(chunks, 1); i += 64 {
		n := freshIDs.Add(1)
		j := job{tenant: tenants[len(list)%len(tenants)], id: fmt.Sprintf("bench-%d", n)}
		for k := range int64(64) {
			j.orders = append(j.orders, n*64+k)
		}
		list = append(list, j)
	}
	c.place(b, list, 1)
	return list
}
