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

// batchesOf cuts n groups of targetsPerJob rows, from first, into batches
// of size, as a job of those rows is cut into chunks (so the loop commits
// exactly as many transactions of the same sizes as chunks does). Row i of
// a group has the revision and qty the seeder gives it.
func batchesOf(first int64, groups, size int) []loopBatch {
	var out []loopBatch
	for g := range groups {
		for from := 0; from < targetsPerJob; from += size {
			var ids, revisions, qtys []int32
			for i := from; i < min(from+size, targetsPerJob); i++ {
				ids = append(ids, int32(first)+int32(g*targetsPerJob+i))
				revisions = append(revisions, int32(i%5))
				qtys = append(qtys, int32(1+i%7))
			}
			out = append(out, loopBatch{args: []any{ids, revisions, qtys}, rows: len(ids)})
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

// dbaLoop runs batches to their end and returns the sample (one chunk per
// batch).
func dbaLoop(ctx context.Context, conns []*pgx.Conn, shop string, batches []loopBatch) (sample, error) {
	work := make(chan loopBatch, len(batches))
	for _, b := range batches {
		work <- b
	}
	close(work)
	start := time.Now()
	rows, err := runLoop(ctx, conns, fmt.Sprintf(loopBatchSQL, pgx.Identifier{shop}.Sanitize()), work)
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

// loopPairName names loopPair's Pair. Its ratio is of chunks per second
// over batches per second: equal in number and size, so it is rows/s.
const loopPairName = "a declared change's jobs, 2 worker processes vs the DBA's loop, 2 connections (chunk and batch 10)"

// loopPair measures, side by side, jobs of the declared change at chunk
// size 10 drained by two chunks worker processes against the DBA's loop on
// two connections at batch 10, on disjoint rows of the same table, in a
// schema of its own (no other job in the workers' queue).
// Each side's rounds together are also a Result of scenario "loop".
func loopPair(ctx context.Context, admin *pgx.Conn, o Options, rounds int, add func(Result)) (p Pair, err error) {
	schema := "chunks_bench_loop_" + randomHex()
	_, seed, drop, err := newSchema(ctx, admin, o.Conn, schema)
	if err != nil {
		return p, err
	}
	defer func() { err = errors.Join(err, drop()) }()
	if _, err := seed.changeJobs(ctx, 1, 10, true); err != nil { // the table and the change
		return p, err
	}
	if _, err := seed.conn.Exec(ctx, fmt.Sprintf(loopAuditSQL, pgx.Identifier{seed.shop}.Sanitize())); err != nil {
		return p, err
	}
	conns, stop, err := bothSides(ctx, o, schema, seed)
	if err != nil {
		return p, err
	}
	defer func() { err = errors.Join(err, stop()) }()
	// As many rows a round as two workers change in about the scenario's
	// duration at chunk size 10 (a smoke run: a few jobs).
	groups := max(4, int(o.Duration.Seconds()*80))
	chunks := func() (sample, error) {
		ids, err := seed.changeJobs(ctx, groups, 10, true)
		if err != nil {
			return sample{}, err
		}
		return throughput(ctx, seed.conn, ids, 2*time.Millisecond)
	}
	loop := func() (sample, error) {
		first, err := seed.rows(ctx, groups)
		if err != nil {
			return sample{}, err
		}
		return dbaLoop(ctx, conns, seed.shop, batchesOf(first, groups, 10))
	}
	// Each side's sessions make their plans first.
	if _, err := chunks(); err != nil {
		return p, err
	}
	if _, err := loop(); err != nil {
		return p, err
	}
	var totals [2]sample
	counting := func(side int, measure measureFunc) measureFunc {
		return func() (sample, error) {
			s, err := measure()
			totals[side].chunks += s.chunks
			totals[side].orders += s.orders
			totals[side].elapsed += s.elapsed
			return s, err
		}
	}
	p, err = sideBySide(loopPairName, "chunks, 2 worker processes", "the DBA's loop, 2 connections", rounds, counting(0, chunks), counting(1, loop))
	add(totals[0].result("loop", "chunks, 2 worker processes, chunk size 10", false))
	add(totals[1].result("loop", "the DBA's loop, 2 connections, batch 10", false))
	return p, err
}
