package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The loop a DBA would write instead of chunks (issue 37): per batch of
// targets, BEGIN, one UPDATE ... FROM unnest(...) with the same pins as the
// declared change (the version column and the expect column) that also
// writes an audit row per changed row in the same statement, COMMIT. It
// checks no approval, keeps no progress and cannot resume: the reference a
// chunk of a declared change is held against.

// loopAuditSQL creates the loop's audit table in the change's schema.
const loopAuditSQL = `create table %s.loop_audit(id integer primary key, revision_before integer not null,
	revision_after integer not null, at timestamptz not null default now())`

// fairLoopAuditSQL creates the audit table of the loop that keeps what
// chunks keeps (change_audit's columns and both unique keys): what an undo
// and a proof of exactly once need, and the minimal loop does not write.
const fairLoopAuditSQL = `create table %s.loop_change_audit(job_id text not null, ordinal integer not null, key text not null,
	version_before bigint, version_after bigint, before jsonb not null, after jsonb not null, at timestamptz not null default now(),
	primary key (job_id, ordinal), unique (job_id, key))`

// fairLoopBatchSQL is that loop's statement: $1 ids, $2 revisions, $3
// qtys, $4 the job, $5 the batch's first ordinal. Like a chunk, it locks
// the pinned rows, takes their before values by ctid (no RETURNING OLD
// before PostgreSQL 18), updates them, and writes one audit row each with
// the written column's before and after image.
const fairLoopBatchSQL = `with t as (select * from unnest($1::integer[], $2::integer[], $3::integer[]) with ordinality as t(id, revision, qty, ord)),
	b as (select x.ctid as tid, x.id, x.state, x.revision, t.ord from %[1]s.tickets as x
	        join t on x.id = t.id and x.revision = t.revision and x.qty = t.qty
	       order by x.id for update of x),
	changed as (update %[1]s.tickets as x set state = 'cancelled', revision = x.revision + 1
	              from b where x.ctid = b.tid
	            returning b.ord, x.id, b.revision as version_before, x.revision as version_after, b.state as state_before, x.state)
	insert into %[1]s.loop_change_audit (job_id, ordinal, key, version_before, version_after, before, after)
	select $4, $5 + ord::integer - 1, id::text, version_before, version_after,
	       jsonb_build_object('state', state_before), jsonb_build_object('state', state) from changed`

// loopBatchSQL is the loop's statement: $1 ids, $2 revisions, $3 qtys.
const loopBatchSQL = `with t as (select * from unnest($1::integer[], $2::integer[], $3::integer[]) as t(id, revision, qty)),
	changed as (update %[1]s.tickets as x set state = 'cancelled', revision = x.revision + 1
	              from t where x.id = t.id and x.revision = t.revision and x.qty = t.qty
	            returning x.id, t.revision as before, x.revision as after)
	insert into %[1]s.loop_audit (id, revision_before, revision_after) select id, before, after from changed`

// loopBatch is one transaction of the loop: its statement's arguments,
// and the rows it must change.
type loopBatch struct {
	args []any
	rows int
}

// batchesOf cuts n groups of group rows, from first, into batches of
// size, as a job of those rows is cut into chunks (so the loop commits
// exactly as many transactions of the same sizes as chunks does). Row i of
// a group has the revision and qty the seeder gives it. audited: the
// batches of the fair loop, with their job (one a group) and first ordinal.
func batchesOf(first int64, groups, group, size int, audited bool) []loopBatch {
	var out []loopBatch
	for g := range groups {
		for from := 0; from < group; from += size {
			var ids, revisions, qtys []int32
			for i := from; i < min(from+size, group); i++ {
				ids = append(ids, int32(first)+int32(g*group+i))
				revisions = append(revisions, int32(i%5))
				qtys = append(qtys, int32(1+i%7))
			}
			args := []any{ids, revisions, qtys}
			if audited {
				args = append(args, fmt.Sprintf("loop-%d-%d", first, g), int32(from))
			}
			out = append(out, loopBatch{args: args, rows: len(ids)})
		}
	}
	return out
}

// runLoop is the DBA's loop: the batches of work, on conns at once, each
// batch one transaction of statement that must change exactly its rows,
// until work closes. A batch under way when ctx ends still commits (a
// cancelled query would close its connection). It returns the rows changed.
func runLoop(ctx context.Context, conns []*pgx.Conn, statement string, work <-chan loopBatch) (int, error) {
	var wg sync.WaitGroup
	counts := make([]int, len(conns))
	errs := make([]error, len(conns))
	for i, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				err := pgx.BeginFunc(context.WithoutCancel(ctx), conn, func(tx pgx.Tx) error {
					tag, err := tx.Exec(context.WithoutCancel(ctx), statement, b.args...)
					if err == nil && tag.RowsAffected() != int64(b.rows) {
						err = fmt.Errorf("the loop changed %d rows of a batch of %d", tag.RowsAffected(), b.rows)
					}
					return err
				})
				if err != nil {
					errs[i] = err
					return
				}
				counts[i] += b.rows
			}
		}()
	}
	wg.Wait()
	rows := 0
	for _, n := range counts {
		rows += n
	}
	return rows, errors.Join(errs...)
}

// dbaLoop runs batches of statement (loopBatchSQL or fairLoopBatchSQL) to
// their end and returns the sample (one chunk per batch).
func dbaLoop(ctx context.Context, conns []*pgx.Conn, shop, statement string, batches []loopBatch) (sample, error) {
	work := make(chan loopBatch, len(batches))
	for _, b := range batches {
		work <- b
	}
	close(work)
	start := time.Now()
	rows, err := runLoop(ctx, conns, fmt.Sprintf(statement, pgx.Identifier{shop}.Sanitize()), work)
	return sample{elapsed: time.Since(start), chunks: len(batches), orders: rows}, err
}

// bothSides starts what issue 37's references compare: 2 chunks worker
// processes (concurrency 1) on schema, and 2 connections for the DBA's
// loop. stop ends the workers and closes the connections.
func bothSides(ctx context.Context, o Options, schema string, seed *seeder) (conns []*pgx.Conn, stop func() error, err error) {
	stopWorkers, err := workers(ctx, o, schema, 2, time.Second, "--concurrency", "1")
	if err != nil {
		return nil, nil, err
	}
	stop = func() error {
		err := stopWorkers()
		for _, c := range conns {
			closeConn(ctx, c, &err)
		}
		return err
	}
	for range 2 {
		c, _, err := connect(ctx, seed.conn.Config())
		if err != nil {
			return nil, nil, errors.Join(err, stop())
		}
		conns = append(conns, c)
	}
	return conns, stop, nil
}

// loopPairName names loopPair's Pair at chunk size size. Its ratio is of
// chunks per second over batches per second: equal in number and size, so
// it is rows/s.
func loopPairName(size int) string {
	return fmt.Sprintf("a declared change's jobs, 2 worker processes vs the DBA's loop, 2 connections (chunk and batch %d)", size)
}

// fairLoopPairName names the Pair of chunks against the loop that keeps
// chunks' audit, at chunk size size.
func fairLoopPairName(size int) string {
	return fmt.Sprintf("a declared change's jobs, 2 worker processes vs the loop with chunks' audit, 2 connections (chunk and batch %d)", size)
}

// loopSizes are the chunk sizes the loop scenario compares at: the seed
// lab's, and the 100 and 1,000 (gh-ost's and GitLab's batches).
var loopSizes = []int{10, 100, 1000}

// loopPairs measures, side by side, jobs of the declared change at chunk
// size size drained by two chunks worker processes against the DBA's loop
// on two connections at batch size, on disjoint rows of the same table, in
// a schema of its own (no other job in the workers' queue); then chunks
// against the loop that keeps chunks' audit (fairLoopBatchSQL). A job
// holds 64 targets at chunk size 10 (the seed lab's), else 10 chunks.
// Each side's rounds together are also a Result of scenario "loop".
func loopPairs(ctx context.Context, admin *pgx.Conn, o Options, rounds, size int, add func(Result)) (ps []Pair, err error) {
	schema := "chunks_bench_loop_" + randomHex()
	_, seed, drop, err := newSchema(ctx, admin, o.Conn, schema)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, drop()) }()
	group := targetsPerJob
	if size > 10 {
		group = 10 * size
	}
	if _, err := seed.changeJobsOf(ctx, 1, group, size, true); err != nil { // the table and the change
		return nil, err
	}
	for _, create := range []string{loopAuditSQL, fairLoopAuditSQL} {
		if _, err := seed.conn.Exec(ctx, fmt.Sprintf(create, pgx.Identifier{seed.shop}.Sanitize())); err != nil {
			return nil, err
		}
	}
	conns, stop, err := bothSides(ctx, o, schema, seed)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, stop()) }()
	// As many rows a round as two workers change in about the scenario's
	// duration (a smoke run: a few jobs): about 5,000 rows/s at chunk size
	// 10, 30,000 at 100 and more.
	perSecond := 5000.0
	if size > 10 {
		perSecond = 30000
	}
	groups := max(1, int(o.Duration.Seconds()*perSecond)/group)
	if size == 10 {
		groups = max(4, groups) // the seed lab's jobs of 64: a few, for both workers
	}
	chunks := func() (sample, error) {
		ids, err := seed.changeJobsOf(ctx, groups, group, size, true)
		if err != nil {
			return sample{}, err
		}
		return throughputOf(ctx, seed.conn, ids, group, size, 2*time.Millisecond)
	}
	loop := func(statement string, audited bool) measureFunc {
		return func() (sample, error) {
			first, err := seed.rowsOf(ctx, groups, group)
			if err != nil {
				return sample{}, err
			}
			return dbaLoop(ctx, conns, seed.shop, statement, batchesOf(first, groups, group, size, audited))
		}
	}
	minimal, fair := loop(loopBatchSQL, false), loop(fairLoopBatchSQL, true)
	// Each side's sessions make their plans first.
	for _, warm := range []measureFunc{chunks, minimal, fair} {
		if _, err := warm(); err != nil {
			return nil, err
		}
	}
	var totals [3]sample
	counting := func(side int, measure measureFunc) measureFunc {
		return func() (sample, error) {
			s, err := measure()
			totals[side].chunks += s.chunks
			totals[side].orders += s.orders
			totals[side].elapsed += s.elapsed
			return s, err
		}
	}
	p, err := sideBySide(loopPairName(size), "chunks, 2 worker processes", "the DBA's loop, 2 connections", rounds, counting(0, chunks), counting(1, minimal))
	ps = append(ps, p)
	if err != nil {
		return ps, err
	}
	p, err = sideBySide(fairLoopPairName(size), "chunks, 2 worker processes", "the loop with chunks' audit, 2 connections", rounds, counting(0, chunks), counting(2, fair))
	ps = append(ps, p)
	add(totals[0].result("loop", fmt.Sprintf("chunks, 2 worker processes, chunk size %d", size), false))
	add(totals[1].result("loop", fmt.Sprintf("the DBA's loop, 2 connections, batch %d", size), false))
	add(totals[2].result("loop", fmt.Sprintf("the loop with chunks' audit, 2 connections, batch %d", size), false))
	return ps, err
}
