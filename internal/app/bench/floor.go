package bench

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
)

// floorChunk is the bench's reference, not a product: the writes of one
// RunChunk of an ordinary job (its orders cancelled with revision + 1, one
// audit row each, next_index moved) in one statement, with no check at all.
// No lock is taken beyond what the writes take themselves. What RunChunk
// costs above it is the price of its checks.
func floorChunk(ctx context.Context, conn *pgx.Conn, jobID string) (res driver.ChunkResult, err error) {
	var n int
	err = conn.QueryRow(ctx, floorSQL, jobID).Scan(&res.Processed, &res.NextIndex, &n)
	res.Done = res.NextIndex == n
	return res, err
}

const floorSQL = `
with j as (select jobs.job_id, jobs.targets, jobs.next_index,
                  least(jobs.next_index + jobs.chunk_size, jsonb_array_length(jobs.targets)) as stop
             from jobs where jobs.job_id = $1),
     t as (select j.job_id, (x.ord - 1)::integer as pos, x.id, x.revision, x.qty
             from j, rows from (jsonb_to_recordset(j.targets) as (id bigint, qty bigint, revision bigint))
                  with ordinality as x(id, qty, revision, ord)
            where x.ord > j.next_index and x.ord <= j.stop),
     o as (update orders as o set state = 'cancelled', revision = o.revision + 1 from t where o.id = t.id returning o.id),
     a as (insert into job_audit (job_id, ordinal, id, previous_revision, new_revision, qty)
           select t.job_id, t.pos, t.id, t.revision, t.revision + 1, t.qty from t),
     u as (update jobs set next_index = j.stop from j where jobs.job_id = j.job_id
           returning jobs.next_index, jsonb_array_length(j.targets) as n)
select coalesce((select array_agg(o.id order by o.id) from o), '{}'), u.next_index, u.n from u`
