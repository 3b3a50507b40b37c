package tests

import (
	"fmt"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// BenchmarkChunkKind puts a declared change beside the built-in
// cancellation on the same path: one RunChunk per iteration over fresh
// 64-target jobs, at chunk sizes 1 and 10, the declared change on a table
// of the bench's shape (an integer key, a version, one expect column, one
// constant set) in a schema of its own. With -count, the two kinds
// alternate, so a load that comes and goes lands on both:
//
//	go test -run '^$' -bench ChunkKind -benchtime 2000x -count 8 ./tests/ > kind.txt
//	benchstat -col /kind kind.txt
func BenchmarkChunkKind(b *testing.B) {
	for _, size := range []int{1, 10} {
		for _, kind := range []string{"builtin", "declared"} {
			b.Run(fmt.Sprintf("size=%d/kind=%s", size, kind), func(b *testing.B) {
				s := pgtest.NewSchema(b)
				perJob := (64 + size - 1) / size
				jobs := b.N/perJob + 1
				targets := `(select jsonb_agg(jsonb_build_object('id', (j - 1) * 64 + i, 'revision', 3, 'qty', 2))
				              from generate_series(1, 64) i)`
				if kind == "builtin" {
					s.Exec(b, `insert into orders (id, tenant, qty, state, revision)
					           select g, 'acme', 2, 'pending', 3 from generate_series(1, $1::int * 64) g`, jobs)
					s.Exec(b, `select count(register(jsonb_build_object('job_id', 'j' || j, 'tenant', 'acme',
					             'chunk_size', $2::int, 'allow_partial', true, 'targets', `+targets+`)))
					           from generate_series(1, $1::int) j`, jobs, size)
				} else {
					shop := s.UserSchema(b, `create table %[1]s.tickets(id integer primary key, qty integer not null,
					  state text not null, revision integer not null)`)
					s.Exec(b, fmt.Sprintf(`insert into %s.tickets select g, 2, 'pending', 3 from generate_series(1, $1::int * 64) g`, shop), jobs)
					s.Exec(b, "select define_change($1)", fmt.Sprintf(`{"name": "bench_cancel", "table": "%s.tickets", "key": "id",
					  "version": "revision", "expect": ["qty"], "set": {"state": "cancelled"}}`, shop))
					s.Exec(b, `select count(register_change('bench_cancel', jsonb_build_object('job_id', 'j' || j, 'tenant', 'acme',
					             'chunk_size', $2::int, 'allow_partial', true, 'targets', `+targets+`)))
					           from generate_series(1, $1::int) j`, jobs, size)
				}
				s.Exec(b, "analyze")
				b.ResetTimer()
				job, rows := 1, 0
				for i := 0; i < b.N; i++ {
					res, err := driver.RunChunk(ctx, s.Conn, fmt.Sprintf("j%d", job), nil)
					if err != nil {
						b.Fatal(err)
					}
					rows += len(res.AllKeys())
					if res.Done {
						job++
					}
				}
				b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}
