package shards

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// The safety calls through a real router with two shards and a worker on
// each: the preflight (check_plan) reads the shard of the plan's tenant; a
// canary (pause_job_after) is counted by the workers of the job's shard,
// which pause the job after exactly its chunks; the undo (register_undo)
// is registered on that shard as a job of the same tenant, which its
// workers run; the lineage (job_lineage) is read there. A job of another
// tenant is answered as missing, and the shard's own refusals come back as
// it raised them.
func TestSafetyThroughRouter(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers[:2])
	a := job{tenant: "acme", id: "acme-canary", orders: []int64{1, 2, 3, 4}}
	b := job{tenant: "initech", id: "initech-canary", orders: []int64{5, 6, 7, 8}}
	if c.shardOf(t, a.tenant) == c.shardOf(t, b.tenant) {
		t.Fatalf("%s and %s share a shard; the test wants one on each", a.tenant, b.tenant)
	}

	// The preflight, before and after registering, on the tenant's shard:
	// orders 1-4 are acme's, on acme's shard, so on initech's they are missing.
	check := func(p driver.Plan) driver.PlanCheck {
		t.Helper()
		res, err := driver.CheckPlan(ctx, c.router, p)
		if err != nil {
			t.Fatalf("check_plan(%s of %s) through the router: %v", p.JobID, p.Tenant, err)
		}
		return res
	}
	if res := check(a.plan(1)); res.OK || res.Job != driver.JobFree || len(res.Problems()) != 4 {
		t.Errorf("check of %s before its orders are there: %+v; want a free id, every target missing", a.id, res)
	}
	c.place(t, []job{a, b}, 1)
	if res := check(a.plan(1)); !res.OK || res.Job != driver.JobRegistered || len(res.Problems()) != 0 {
		t.Errorf("check of registered %s: %+v; want ok, registered", a.id, res)
	}
	stray := job{tenant: b.tenant, id: "initech-stray", orders: a.orders}.plan(1)
	if res := check(stray); res.OK || len(res.Problems()) != 4 || res.Targets[0].Problem != "order 1: missing" {
		t.Errorf("check of %s's orders under %s: %+v; want each missing on %s's shard", a.tenant, b.tenant, res, b.tenant)
	}

	// Canaries, set before any worker runs: 2 chunks of a, 1 of b.
	for _, tc := range []struct {
		j job
		n int
	}{{a, 2}, {b, 1}} {
		changed, err := fleet.PauseAfter(ctx, c.router, driver.JobRef{Tenant: tc.j.tenant, ID: tc.j.id}, tc.n)
		if err != nil || !changed {
			t.Fatalf("pause_job_after(%s, %s, %d): %v, %v", tc.j.tenant, tc.j.id, tc.n, changed, err)
		}
	}
	if changed, err := fleet.PauseAfter(ctx, c.router, driver.JobRef{Tenant: a.tenant, ID: a.id}, 2); err != nil || changed {
		t.Errorf("the same canary again: %v, %v; want no change", changed, err)
	}
	status, err := fleet.Status(ctx, c.router)
	if err != nil || len(status) != 2 || status[0].PauseAfter == nil || *status[0].PauseAfter != 2 ||
		status[1].PauseAfter == nil || *status[1].PauseAfter != 1 {
		t.Fatalf("status with the canaries pending: %+v, %v", status, err)
	}
	c.startWorkers(t, 1, 0)
	pgtest.WaitFor(t, 30*time.Second, "both canaries to pause their jobs", untilOK(t, func() (bool, error) {
		status, err := fleet.Status(ctx, c.router)
		return err == nil && len(status) == 2 && status[0].State == fleet.StatePaused && status[1].State == fleet.StatePaused, err
	}))
	for _, tc := range []struct {
		j    job
		next int
	}{{a, 2}, {b, 1}} {
		got, err := driver.JobRef{Tenant: tc.j.tenant, ID: tc.j.id}.Inspect(ctx, c.router)
		if err != nil || got == nil || got.NextIndex != tc.next {
			t.Errorf("%s after its canary: %+v, %v; want next_index %d", tc.j.id, got, err, tc.next)
		}
	}

	// The undo of a's two committed orders, on a's shard, run by its worker.
	undo, err := driver.JobRef{Tenant: a.tenant, ID: a.id}.RegisterUndo(ctx, c.router, "")
	if err != nil || !undo.Created || undo.JobID != a.id+"-undo" || undo.Undoes != a.id || fmt.Sprint(undo.Targets) != "[1 2]" {
		t.Fatalf("register_undo(%s, %s) through the router: %+v, %v; want %s-undo restoring 1 and 2", a.tenant, a.id, undo, err, a.id)
	}
	if again, err := (driver.JobRef{Tenant: a.tenant, ID: a.id}).RegisterUndo(ctx, c.router, ""); err != nil || again.Created {
		t.Errorf("the same undo again: %+v, %v; want no change", again, err)
	}
	pgtest.WaitFor(t, 30*time.Second, "the worker of "+a.tenant+"'s shard to run the undo", untilOK(t, func() (bool, error) {
		got, err := driver.JobRef{Tenant: a.tenant, ID: undo.JobID}.Inspect(ctx, c.router)
		return err == nil && got != nil && got.NextIndex == 2, err
	}))
	rows, err := c.shardOf(t, a.tenant).conn.Query(ctx, "select state || '@' || revision from orders order by id")
	if err != nil {
		t.Fatal(err)
	}
	var orders []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			t.Fatal(err)
		}
		orders = append(orders, o)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"pending@2", "pending@2", "pending@0", "pending@0"}; !slices.Equal(orders, want) {
		t.Errorf("%s's orders after the canary and the undo: %v; want %v", a.tenant, orders, want)
	}

	// The lineage, both ways, on a's shard only.
	if l, err := (driver.JobRef{Tenant: a.tenant, ID: a.id}).Lineage(ctx, c.router); err != nil || l == nil || l.UndoneBy == nil || *l.UndoneBy != undo.JobID {
		t.Errorf("job_lineage(%s, %s): %+v, %v; want undone by %s", a.tenant, a.id, l, err, undo.JobID)
	}
	if l, err := (driver.JobRef{Tenant: a.tenant, ID: undo.JobID}).Lineage(ctx, c.router); err != nil || l == nil || l.Kind != driver.KindRestore ||
		l.Undoes == nil || *l.Undoes != a.id {
		t.Errorf("job_lineage(%s, %s): %+v, %v; want the restore of %s", a.tenant, undo.JobID, l, err, a.id)
	}
	if l, err := (driver.JobRef{Tenant: b.tenant, ID: a.id}).Lineage(ctx, c.router); err != nil || l != nil {
		t.Errorf("job_lineage of %s's job under %s: %+v, %v; want nil", a.tenant, b.tenant, l, err)
	}

	// Refusals: the job of another tenant, and the shard's own.
	for _, tc := range []struct {
		call       func() error
		code, want string
	}{
		{func() error {
			_, err := driver.JobRef{Tenant: b.tenant, ID: a.id}.RegisterUndo(ctx, c.router, "")
			return err
		},
			driver.ConflictCode, "job acme-canary: not found for tenant initech"},
		{func() error {
			_, err := fleet.PauseAfter(ctx, c.router, driver.JobRef{Tenant: b.tenant, ID: a.id}, 1)
			return err
		},
			driver.ConflictCode, "job acme-canary: not found for tenant initech"},
		{func() error { // the shard's own check (driver.JobRef.RegisterUndo checks it before any call)
			_, err := c.router.Exec(ctx, "select register_undo($1, $2, $3)", a.tenant, a.id, "b c")
			return err
		},
			"22023", `new_job_id: must be 1 to 64 ASCII letters, digits, _ or -, got "b c"`},
		{func() error {
			_, err := driver.JobRef{Tenant: a.tenant, ID: a.id}.RegisterUndo(ctx, c.router, "other")
			return err
		},
			driver.ConflictCode, "job acme-canary: already undone by acme-canary-undo"},
		{func() error {
			_, err := driver.JobRef{Tenant: a.tenant, ID: undo.JobID}.RegisterUndo(ctx, c.router, "")
			return err
		},
			driver.ConflictCode, "job acme-canary-undo: is the undo of acme-canary"},
	} {
		err := tc.call()
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != tc.code || !strings.HasPrefix(pgErr.Message, tc.want) {
			t.Errorf("%v; want %s %s...", err, tc.code, tc.want)
		}
	}
	if _, err := (driver.JobRef{Tenant: a.tenant, ID: a.id}).RegisterUndo(ctx, c.router, "b c"); !errors.Is(err, driver.ErrInvalid) {
		t.Errorf("register_undo with new_job_id b c: %v; want ErrInvalid before any call", err)
	}
	if _, err := fleet.PauseAfter(ctx, c.router, driver.JobRef{Tenant: a.tenant, ID: a.id}, 0); !errors.Is(err, driver.ErrInvalid) {
		t.Errorf("pause_job_after with 0 chunks: %v; want ErrInvalid before any call", err)
	}
}

// chunks check, pause --after, undo and report through the router, with
// --tenant where a job is named: docs/beyond-one-server.md's commands for a shard's
// tenant, no worker running.
func TestSafetyCLIThroughRouter(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers[:2])
	j := job{tenant: "initech", id: "initech-q4", orders: []int64{5, 6, 7}}
	sh := c.shardOf(t, j.tenant)
	if _, err := sh.conn.Exec(ctx, `insert into orders (id, tenant, qty, state, revision)
		select id, 'initech', 1, 'pending', 0 from unnest($1::integer[]) as id`, j.orders); err != nil {
		t.Fatal(err)
	}
	plan, err := json.Marshal(j.plan(1))
	if err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, plan, 0o600); err != nil {
		t.Fatal(err)
	}
	chunks := func(wantCode int, args ...string) string {
		t.Helper()
		return runChunks(t, wantCode, append([]string{args[0], "--dsn", routerServer.DSN(), "--schema", c.schema}, args[1:]...)...)
	}
	expect := func(out string, lines ...string) {
		t.Helper()
		for _, l := range lines {
			if !strings.Contains(out, l) {
				t.Errorf("output does not say %q:\n%s", l, out)
			}
		}
	}

	expect(chunks(0, "check", planFile), "job initech-q4: the id is free; register would create the job",
		"3 of 3 targets would be cancelled now; 0 would not")
	chunks(0, "register", planFile)
	expect(chunks(0, "check", planFile), "job initech-q4: already registered with this approval")

	var canary struct {
		Changed bool `json:"changed"`
		After   int  `json:"after"`
	}
	if err := json.Unmarshal([]byte(chunks(0, "pause", "--after", "1", "--tenant", j.tenant, "--json", j.id)), &canary); err != nil ||
		!canary.Changed || canary.After != 1 {
		t.Errorf("chunks pause --after 1 --tenant --json: %+v, %v", canary, err)
	}
	var pending *int
	if err := sh.conn.QueryRow(ctx, "select pause_after from job_queue where job_id = $1", j.id).Scan(&pending); err != nil ||
		pending == nil || *pending != 1 {
		t.Errorf("the canary on %s's shard: %v, %v; want 1", j.tenant, pending, err)
	}
	expect(chunks(0, "pause", "--after", "1", "--tenant", j.tenant, j.id), "already pauses after 1 more chunk; nothing changed")
	expect(chunks(3, "pause", "--after", "1", "--tenant", "acme", j.id), "job initech-q4: not found for tenant acme")

	chunks(0, "pause", "--tenant", j.tenant, j.id)
	chunks(0, "run", "--tenant", j.tenant, j.id)
	expect(chunks(1, "undo", j.id), "through a chunks router, the job commands need --tenant")
	expect(chunks(0, "undo", "--tenant", j.tenant, j.id),
		"registered job initech-q4-undo, the undo of initech-q4: it restores 1 order to pending")
	chunks(0, "drain", "--tenant", j.tenant, j.id+"-undo")
	expect(chunks(0, "report", "--tenant", j.tenant, j.id),
		"job initech-q4 was undone by initech-q4-undo")
	expect(chunks(0, "report", "--tenant", j.tenant, j.id+"-undo"),
		"job initech-q4-undo: 1 approved, 1 committed, 0 remaining: 1 matching",
		"job initech-q4-undo is the undo of initech-q4")
}
