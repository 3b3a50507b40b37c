package bench

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// targetsPerJob is the size of every benchmark job: the contract's maximum.
const targetsPerJob = 64

// seeder creates pending orders and registers jobs over them, server-side.
// Every job has the same shape: target i has revision i % 5 and qty
// 1 + i % 7, so two jobs can be compared order by order.
type seeder struct {
	conn    *pgx.Conn
	tenant  string
	nextID  int64
	nextJob int
}

// jobs registers n new jobs of 64 targets with chunkSize and returns their ids.
func (s *seeder) jobs(ctx context.Context, n, chunkSize int) ([]string, error) {
	first, prefix := s.nextID, fmt.Sprintf("b%d-", s.nextJob)
	if _, err := s.conn.Exec(ctx, `insert into orders (id, tenant, qty, state, revision)
		select $1 + g, $3::text, 1 + (g % 64) % 7, 'pending', (g % 64) % 5 from generate_series(0, $2 - 1) as g`,
		first, n*targetsPerJob, s.tenant); err != nil {
		return nil, fmt.Errorf("seed orders: %w", err)
	}
	if _, err := s.conn.Exec(ctx, `select count(register(jsonb_build_object(
		  'job_id', $3::text || j, 'tenant', $5::text, 'chunk_size', $4::int, 'allow_partial', true,
		  'targets', (select jsonb_agg(jsonb_build_object('id', $1 + j * 64 + i, 'revision', i % 5, 'qty', 1 + i % 7))
		                from generate_series(0, 63) as i))))
		from generate_series(0, $2 - 1) as j`, first, n, prefix, chunkSize, s.tenant); err != nil {
		return nil, fmt.Errorf("register jobs: %w", err)
	}
	if _, err := s.conn.Exec(ctx, "analyze orders, jobs, job_audit"); err != nil {
		return nil, err
	}
	ids := make([]string, n)
	for j := range ids {
		ids[j] = fmt.Sprintf("%s%d", prefix, j)
	}
	s.nextID += int64(n * targetsPerJob)
	s.nextJob++
	return ids, nil
}

// filler adds n orders that no job touches (for the scale scenario and the
// ceiling), and returns the first id.
func (s *seeder) filler(ctx context.Context, n int) (int64, error) {
	first := s.nextID
	if _, err := s.conn.Exec(ctx, `insert into orders (id, tenant, qty, state, revision)
		select $1 + g, 'filler', 1, 'pending', 0 from generate_series(0, $2 - 1) as g`, first, n); err != nil {
		return 0, fmt.Errorf("seed filler orders: %w", err)
	}
	s.nextID += int64(n)
	return first, nil
}

// jobsFor is how many jobs keep a chunk loop busy for the given seconds at a
// generous upper bound of the chunk rate.
func jobsFor(seconds float64, chunkSize, workers int) int {
	const maxChunksPerSecond = 5000
	chunksPerJob := (targetsPerJob + chunkSize - 1) / chunkSize
	return max(workers, int(seconds*maxChunksPerSecond)/chunksPerJob+1)
}
