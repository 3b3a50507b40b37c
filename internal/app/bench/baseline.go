package bench

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/dbutil"
)

// baselineChunk is the comparison, not a product: the same contract done the
// way a typical client script does it, statement by statement. It locks the
// job row, reads the job and its audit and checks the audit in Go, updates
// each order and inserts each audit row with a statement of its own, moves
// next_index and commits: about 2 x chunk size + 5 round trips.
func baselineChunk(ctx context.Context, conn *pgx.Conn, jobID string) (res driver.ChunkResult, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return res, err
	}
	defer func() { err = dbutil.RollbackWithoutCancel(ctx, tx, err) }()
	var tenant string
	var targetsJSON []byte
	var chunkSize, next int
	if err := tx.QueryRow(ctx, "select tenant, targets, chunk_size, next_index from jobs where job_id = $1 for update", jobID).
		Scan(&tenant, &targetsJSON, &chunkSize, &next); err != nil {
		return res, err
	}
	var targets []driver.Target
	if err := json.Unmarshal(targetsJSON, &targets); err != nil {
		return res, err
	}
	rows, err := tx.Query(ctx, "select id, previous_revision, new_revision, qty from job_audit where job_id = $1 order by ordinal", jobID)
	if err != nil {
		return res, err
	}
	audit, err := pgx.CollectRows(rows, pgx.RowToStructByPos[driver.Change])
	if err != nil {
		return res, err
	}
	if len(audit) != next {
		return res, fmt.Errorf("job %s: %d audit rows, next_index %d", jobID, len(audit), next)
	}
	for i, a := range audit {
		if t := targets[i]; a != (driver.Change{ID: t.ID, PreviousRevision: t.Revision, NewRevision: t.Revision + 1, Qty: t.Qty}) {
			return res, fmt.Errorf("job %s: audit row %d differs", jobID, i)
		}
	}
	end := min(next+chunkSize, len(targets))
	res.Processed = []int64{}
	for _, t := range targets[next:end] {
		tag, err := tx.Exec(ctx, `update orders set state = 'cancelled', revision = revision + 1
			where id = $1 and tenant = $2 and revision = $3 and qty = $4 and state = 'pending'`, t.ID, tenant, t.Revision, t.Qty)
		if err != nil {
			return res, err
		}
		if tag.RowsAffected() != 1 {
			return res, fmt.Errorf("order %d: does not match its approval", t.ID)
		}
		res.Processed = append(res.Processed, t.ID)
	}
	for i, t := range targets[next:end] {
		if _, err := tx.Exec(ctx, `insert into job_audit (job_id, ordinal, id, previous_revision, new_revision, qty)
			values ($1, $2, $3, $4, $5, $6)`, jobID, next+i, t.ID, t.Revision, t.Revision+1, t.Qty); err != nil {
			return res, err
		}
	}
	if _, err := tx.Exec(ctx, "update jobs set next_index = $2 where job_id = $1", jobID, end); err != nil {
		return res, err
	}
	res.NextIndex, res.Done = end, end == len(targets)
	return res, tx.Commit(ctx)
}
