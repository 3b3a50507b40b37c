package tests

import (
	"fmt"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// BenchmarkRunChunk is the chunk path for benchstat: one RunChunk on one
// connection per iteration, over fresh 64-target jobs, for chunk sizes 1, 5
// and 10. It runs on the test server (non-durable unless $CHUNKS_TEST_DSN
// says otherwise); chunks bench measures against a durable one.
//
//	go test -run '^$' -bench RunChunk -count 10 ./tests/ > new.txt
//	benchstat old.txt new.txt
func BenchmarkRunChunk(b *testing.B) {
	for _, size := range []int{1, 5, 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			s := pgtest.NewSchema(b)
			perJob := (64 + size - 1) / size
			jobs := b.N/perJob + 1
			s.Exec(b, `insert into orders (id, tenant, qty, state, revision)
			           select g, 'acme', 2, 'pending', 3 from generate_series(1, $1::int * 64) g`, jobs)
			s.Exec(b, `select count(register(jsonb_build_object('job_id', 'j' || j, 'tenant', 'acme',
			             'chunk_size', $2::int, 'allow_partial', true,
			             'targets', (select jsonb_agg(jsonb_build_object('id', (j - 1) * 64 + i, 'revision', 3, 'qty', 2))
			                           from generate_series(1, 64) i))))
			           from generate_series(1, $1::int) j`, jobs, size)
			b.ResetTimer()
			job, orders := 1, 0
			for i := 0; i < b.N; i++ {
				res, err := driver.RunChunk(ctx, s.Conn, fmt.Sprintf("j%d", job), nil)
				if err != nil {
					b.Fatal(err)
				}
				orders += len(res.Processed)
				if res.Done {
					job++
				}
			}
			b.ReportMetric(float64(orders)/b.Elapsed().Seconds(), "orders/s")
		})
	}
}
