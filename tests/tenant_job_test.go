package tests

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// docs/limits-and-decisions.md "Decisions where the contract is silent" (one job API): on one
// server, a job operation with a tenant runs the same SQL as through a
// router, run_chunk(tenant, job_id), ...: the right tenant works, another
// tenant is refused as the router refuses it, and nothing is written.
func TestTenantJobOnOneServer(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "j", "acme", 1, 4, 2)
	right, wrong := driver.JobRef{Tenant: "acme", ID: "j"}, driver.JobRef{Tenant: "initech", ID: "j"}
	before := ordersOf(t, s, 1, 4)
	audit := queryString(t, s, "select count(*)::text from job_audit")

	// Another tenant: refused, or answered as missing, with nothing written.
	refusals := []func() error{
		func() error { _, err := wrong.RunChunk(ctx, s.Conn, nil); return err },
		func() error { _, err := wrong.Report(ctx, s.Conn); return err },
		func() error { _, err := fleet.Pause(ctx, s.Conn, wrong); return err },
		func() error { _, err := fleet.PauseAfter(ctx, s.Conn, wrong, 1); return err },
		func() error { _, err := fleet.Resume(ctx, s.Conn, wrong); return err },
		func() error { _, err := wrong.RegisterUndo(ctx, s.Conn, ""); return err },
	}
	for i, call := range refusals {
		err := call()
		var pgErr *pgconn.PgError
		if !errors.Is(err, driver.ErrConflict) || !errors.As(err, &pgErr) || pgErr.Code != driver.ConflictCode ||
			pgErr.Message != "job j: not found for tenant initech" {
			t.Fatalf("call %d as initech: %v, want CH409 job j: not found for tenant initech", i, err)
		}
	}
	if job, err := wrong.Inspect(ctx, s.Conn); err != nil || job != nil {
		t.Fatalf("inspect as initech: %+v, %v; want nil, nil", job, err)
	}
	if l, err := wrong.Lineage(ctx, s.Conn); err != nil || l != nil {
		t.Fatalf("lineage as initech: %+v, %v; want nil, nil", l, err)
	}
	if got := ordersOf(t, s, 1, 4); got != before {
		t.Fatalf("orders after the refusals:\n got %s\nwant %s", got, before)
	}
	if got := queryString(t, s, "select count(*)::text from job_audit"); got != audit {
		t.Fatalf("audit rows after the refusals: %s, want %s", got, audit)
	}
	sameJSON(t, "queue after the refusals", queryString(t, s,
		"select jsonb_build_object('next_index', j.next_index, 'paused', q.paused_at is not null)::text from jobs j join job_queue q using (job_id) where job_id = 'j'"),
		`{"next_index": 0, "paused": false}`)

	// A bad tenant is refused before any connection.
	if _, err := (driver.JobRef{Tenant: "a b", ID: "j"}).RunChunk(ctx, nil, nil); !errors.Is(err, driver.ErrInvalid) {
		t.Fatalf("bad tenant: %v", err)
	}

	// The job's own tenant: every call works as the one-job call does.
	if job, err := right.Inspect(ctx, s.Conn); err != nil || job == nil || job.Tenant != "acme" || job.NextIndex != 0 {
		t.Fatalf("inspect as acme: %+v, %v", job, err)
	}
	res, err := right.RunChunk(ctx, s.Conn, nil)
	if err != nil || res.NextIndex != 2 || len(res.Processed) != 2 || res.Processed[0] != 1 || res.Processed[1] != 2 {
		t.Fatalf("run_chunk as acme: %+v, %v", res, err)
	}
	var points []string
	res, err = right.RunChunk(ctx, s.Conn, func(p string) error { points = append(points, p); return nil })
	if err != nil || !res.Done || len(points) != 4 {
		t.Fatalf("run_chunk as acme with a fault: %+v, %v, hooks %v", res, err, points)
	}
	if r, err := right.Report(ctx, s.Conn); err != nil || len(r.Matching) != 4 {
		t.Fatalf("report as acme: %+v, %v", r, err)
	}
	if changed, err := fleet.Pause(ctx, s.Conn, right); err == nil || changed {
		t.Fatalf("pause of a finished job as acme: %v, %v (want the one-job call's conflict)", changed, err)
	}
	undo, err := right.RegisterUndo(ctx, s.Conn, "")
	if err != nil || undo.JobID != "j-undo" || len(undo.Targets) != 4 {
		t.Fatalf("register_undo as acme: %+v, %v", undo, err)
	}
	if l, err := right.Lineage(ctx, s.Conn); err != nil || l == nil || l.UndoneBy == nil || *l.UndoneBy != "j-undo" {
		t.Fatalf("lineage as acme: %+v, %v", l, err)
	}
	undoJob := driver.JobRef{Tenant: "acme", ID: "j-undo"}
	if changed, err := fleet.PauseAfter(ctx, s.Conn, undoJob, 1); err != nil || !changed {
		t.Fatalf("pause_job_after as acme: %v, %v", changed, err)
	}
	if changed, err := fleet.Pause(ctx, s.Conn, undoJob); err != nil || !changed {
		t.Fatalf("pause as acme: %v, %v", changed, err)
	}
	if changed, err := fleet.Resume(ctx, s.Conn, undoJob); err != nil || !changed {
		t.Fatalf("resume as acme: %v, %v", changed, err)
	}
	all, err := driver.DrainConfig(ctx, s.Conn.Config(), undoJob, 64, nil)
	if err != nil || !all.Done || len(all.Processed) != 4 {
		t.Fatalf("drain as acme: %+v, %v", all, err)
	}
	sameJSON(t, "orders", ordersOf(t, s, 1, 4),
		`[[1, "acme", 2, "pending", 5], [2, "acme", 2, "pending", 5], [3, "acme", 2, "pending", 5], [4, "acme", 2, "pending", 5]]`)
}
