package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/dbutil"
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
	// shop is the schema of the declared change's table (changeJobs),
	// created with the change on first use and dropped with the bench's.
	shop          string
	changeDefined bool
}

// jobs registers n new jobs of 64 targets with chunkSize and returns their ids.
func (s *seeder) jobs(ctx context.Context, n, chunkSize int) ([]string, error) {
	return s.register(ctx, n, chunkSize, false)
}

// register registers n new jobs of 64 targets with chunkSize, in one
// transaction, and returns their ids. With paused, their queue rows are
// paused in that transaction, so that no worker starts before the caller
// unpauses them.
func (s *seeder) register(ctx context.Context, n, chunkSize int, paused bool) (ids []string, err error) {
	const size = targetsPerJob
	first, prefix := s.nextID, fmt.Sprintf("b%d-", s.nextJob)
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { err = dbutil.RollbackWithoutCancel(ctx, tx, err) }()
	if _, err := tx.Exec(ctx, `insert into orders (id, tenant, qty, state, revision)
		select $1 + g, $3::text, 1 + (g % $4) % 7, 'pending', (g % $4) % 5 from generate_series(0, $2 - 1) as g`,
		first, n*size, s.tenant, size); err != nil {
		return nil, fmt.Errorf("seed orders: %w", err)
	}
	if _, err := tx.Exec(ctx, `select count(register(`+jobSQL+`))
		from generate_series(0, $2 - 1) as j`, first, n, prefix, chunkSize, s.tenant, size); err != nil {
		return nil, fmt.Errorf("register jobs: %w", err)
	}
	if paused {
		if _, err := tx.Exec(ctx, "update job_queue set paused = true where job_id like $1 || '%'", prefix); err != nil {
			return nil, err
		}
	}
	return s.commit(ctx, tx, n, targetsPerJob, "orders, jobs, job_audit")
}

// jobSQL is the plan of job j of a seeded batch, for register and
// register_change: $1 its first row's id, $3 the jobs' prefix, $4 the chunk
// size, $5 the tenant, $6 the targets per job.
const jobSQL = `jsonb_build_object('job_id', $3::text || j, 'tenant', $5::text, 'chunk_size', $4::int, 'allow_partial', true,
	'targets', (select jsonb_agg(jsonb_build_object('id', $1 + j * $6 + i, 'revision', i % 5, 'qty', 1 + i % 7))
	              from generate_series(0, $6 - 1) as i))`

// changeName is the bench's declared change: the cancellation of its own
// table of orders (shop.tickets), of the bench's shape (an integer key, a
// version, one expect column, one constant set).
const changeName = "bench_cancel"

// deleteName is the bench's declared change that deletes (issue 39): the
// same table and targets as changeName's, each deleted row archived in
// shop.tickets_archive.
const deleteName = "bench_purge"

// changeJobs registers n new jobs of 64 targets with chunkSize of the
// declared change changeName over new rows of its table (in the schema
// shop, created with the change on the first call), in one transaction,
// and returns their ids. Target i is as in register's jobs. paused queues
// them paused, for worker processes to take only once throughput lets them.
func (s *seeder) changeJobs(ctx context.Context, n, chunkSize int, paused bool) (ids []string, err error) {
	return s.changeJobsOf(ctx, n, targetsPerJob, chunkSize, paused)
}

// changeJobsOf is changeJobs with jobs of size targets (up to a declared
// change's 10,000).
func (s *seeder) changeJobsOf(ctx context.Context, n, size, chunkSize int, paused bool) (ids []string, err error) {
	return s.jobsOfChange(ctx, changeName, n, size, chunkSize, paused)
}

// jobsOfChange is changeJobsOf for the bench's change name: changeName or
// deleteName.
func (s *seeder) jobsOfChange(ctx context.Context, name string, n, size, chunkSize int, paused bool) (ids []string, err error) {
	table := pgx.Identifier{s.shop, "tickets"}.Sanitize()
	if err := s.defineChange(ctx); err != nil {
		return nil, err
	}
	first, prefix := s.nextID, fmt.Sprintf("b%d-", s.nextJob)
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { err = dbutil.RollbackWithoutCancel(ctx, tx, err) }()
	if _, err := tx.Exec(ctx, fmt.Sprintf(ticketsSQL, table), first, n*size, size); err != nil {
		return nil, fmt.Errorf("seed the change's rows: %w", err)
	}
	if _, err := tx.Exec(ctx, `select count(register_change($7, `+jobSQL+`))
		from generate_series(0, $2 - 1) as j`, first, n, prefix, chunkSize, s.tenant, size, name); err != nil {
		return nil, fmt.Errorf("register the change's jobs: %w", err)
	}
	if paused {
		if _, err := tx.Exec(ctx, "update job_queue set paused = true where job_id like $1 || '%'", prefix); err != nil {
			return nil, err
		}
	}
	return s.commit(ctx, tx, n, size, table+", jobs, change_audit")
}

// ticketsSQL seeds the declared change's rows: $1 the first id, $2 how
// many, $3 the group size (row i of a group as target i of a job).
const ticketsSQL = `insert into %s (id, qty, state, revision)
	select $1 + g, 1 + mod(mod(g, $3), 7), 'pending', mod(mod(g, $3), 5) from generate_series(0, $2 - 1) as g`

// rows adds n groups of 64 rows to the declared change's table, in no job
// (for the DBA's loop), and returns the first id.
func (s *seeder) rows(ctx context.Context, n int) (int64, error) {
	return s.rowsOf(ctx, n, targetsPerJob)
}

// rowsOf is rows with groups of size rows.
func (s *seeder) rowsOf(ctx context.Context, n, size int) (int64, error) {
	if err := s.defineChange(ctx); err != nil {
		return 0, err
	}
	first := s.nextID
	table := pgx.Identifier{s.shop, "tickets"}.Sanitize()
	if _, err := s.conn.Exec(ctx, fmt.Sprintf(ticketsSQL, table), first, n*size, size); err != nil {
		return 0, fmt.Errorf("seed the change's rows: %w", err)
	}
	if _, err := s.conn.Exec(ctx, "analyze "+table); err != nil {
		return 0, err
	}
	s.nextID += int64(n * size)
	return first, nil
}

// defineChange creates the declared change's table and defines the change,
// once.
func (s *seeder) defineChange(ctx context.Context) error {
	table := pgx.Identifier{s.shop, "tickets"}.Sanitize()
	if !s.changeDefined {
		if _, err := s.conn.Exec(ctx, "create schema "+pgx.Identifier{s.shop}.Sanitize()+"; create table "+table+
			"(id integer primary key, qty integer not null, state text not null, revision integer not null); "+
			"create table "+pgx.Identifier{s.shop, "tickets_archive"}.Sanitize()+" (like "+table+"); "+
			"create index on "+pgx.Identifier{s.shop, "tickets_archive"}.Sanitize()+" (id); "+
			// The writer of the chunks schema writes the table (docs/roles.md "Code on your tables").
			"do $g$ declare w text := (select quote_ident(role) from change_writer); begin "+
			"execute format('grant usage on schema %1$I to %2$s; grant select, update, delete, insert on %1$I.tickets, %1$I.tickets_archive to %2$s', "+
			pgQuote(s.shop)+", w); end $g$"); err != nil {
			return fmt.Errorf("create the declared change's table: %w", err)
		}
		for _, def := range []string{
			fmt.Sprintf(`{"name": %q, "table": %q, "key": "id", "version": "revision", "expect": ["qty"], "set": {"state": "cancelled"}}`,
				changeName, s.shop+".tickets"),
			fmt.Sprintf(`{"name": %q, "table": %q, "key": "id", "version": "revision", "expect": ["qty"], "delete": true, "archive": %q}`,
				deleteName, s.shop+".tickets", s.shop+".tickets_archive"),
		} {
			if _, err := s.conn.Exec(ctx, "select define_change($1)", def); err != nil {
				return fmt.Errorf("define the bench's change: %w", err)
			}
		}
		s.changeDefined = true
	}
	return nil
}

// commit commits tx, which registered the n jobs of the next prefix over
// the next n*size rows, analyzes tables and returns the jobs' ids.
func (s *seeder) commit(ctx context.Context, tx pgx.Tx, n, size int, tables string) ([]string, error) {
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	if _, err := s.conn.Exec(ctx, "analyze "+tables); err != nil {
		return nil, err
	}
	ids := make([]string, n)
	for j := range ids {
		ids[j] = fmt.Sprintf("b%d-%d", s.nextJob, j)
	}
	s.nextID += int64(n * size)
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

// pgQuote is text as an SQL string literal.
func pgQuote(text string) string { return "'" + strings.ReplaceAll(text, "'", "''") + "'" }
