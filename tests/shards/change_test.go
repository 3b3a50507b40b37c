package shards

import (
	"fmt"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
)

// register_change through a router (issue 25, item 7): the plan's tenant
// picks the shard, which records the job of its own definition of the
// change; the job runs there through the routed run_chunk, and no other
// shard has it.
func TestRouterRegisterChange(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers[:2])
	def := driver.ChangeDefinition{Name: "hold", Table: c.schema + "_shop.payments", Key: driver.KeyColumn("payment_id"), Version: "lock_version",
		Set: map[string]any{"status": "on_hold"}}
	for _, sh := range c.shards {
		for _, sql := range []string{
			"create schema " + c.schema + "_shop",
			"create table " + def.Table + "(payment_id bigint primary key, status text not null, lock_version integer not null)",
			"insert into " + def.Table + " select g, 'captured', 0 from generate_series(1, 3) g",
			"grant usage on schema " + c.schema + "_shop to " + c.schema + "_writer",
			"grant select, update on " + def.Table + " to " + c.schema + "_writer",
		} {
			if _, err := sh.conn.Exec(ctx, sql); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		t.Cleanup(func() {
			if _, err := sh.conn.Exec(ctx, "drop schema "+c.schema+"_shop cascade"); err != nil {
				t.Errorf("drop schema: %v", err)
			}
		})
		if created, err := driver.DefineChange(ctx, sh.conn, def); err != nil || !created {
			t.Fatalf("DefineChange on %s: %v, %v", sh.name, created, err)
		}
	}
	const tenant = "acme"
	plan := driver.ChangePlan{JobID: "h1", Tenant: tenant, ChunkSize: 2, AllowPartial: true, Targets: []map[string]any{
		{"payment_id": 3, "lock_version": 0}, {"payment_id": 1, "lock_version": 0}}}
	if chk, err := driver.CheckChange(ctx, c.router, "hold", plan); err != nil || !chk.OK || chk.Job != driver.JobFree || len(chk.Targets) != 2 || chk.Targets[0].Key != driver.IntKey(1) {
		t.Fatalf("CheckChange through the router: %+v, %v", chk, err)
	}
	for i, want := range []bool{true, false} {
		if created, err := driver.RegisterChange(ctx, c.router, "hold", plan); err != nil || created != want {
			t.Fatalf("RegisterChange %d through the router: %v, %v; want %v", i, created, err, want)
		}
	}
	res, err := driver.JobRef{Tenant: tenant, ID: "h1"}.RunChunk(ctx, c.router, nil)
	if err != nil || !res.Done || fmt.Sprint(res.Processed) != "[1 3]" {
		t.Fatalf("RunChunk through the router: %+v, %v", res, err)
	}
	// Inspect and Report through the router read the change's job too.
	job, err := driver.JobRef{Tenant: tenant, ID: "h1"}.Inspect(ctx, c.router)
	if err != nil || job == nil || job.Change != "hold" || len(job.ChangeTargets) != 2 || len(job.Targets) != 0 || job.NextIndex != 2 {
		t.Fatalf("Inspect through the router: %+v, %v", job, err)
	}
	report, err := driver.JobRef{Tenant: tenant, ID: "h1"}.Report(ctx, c.router)
	if err != nil || fmt.Sprint(report.Committed, report.Matching) != "[1 3] [1 3]" || report.Keys != nil {
		t.Fatalf("Report through the router: %+v, %v", report, err)
	}
	// Status through the router: the job with its change, and every
	// change's jobs by state, added up over the shards.
	ov, err := fleet.LoadOverview(ctx, c.router, "", 0)
	home := c.shardOf(t, tenant)
	if err != nil || len(ov.Jobs) != 1 || ov.Jobs[0].Change == nil || *ov.Jobs[0].Change != "hold" || ov.Jobs[0].Shard != home.name ||
		fmt.Sprint(ov.Changes) != "map[hold:map[done:1]]" {
		t.Fatalf("LoadOverview through the router: %+v, %v", ov, err)
	}
	// A router keeps no chunks schema: its version is not compared (each
	// shard has its own), so chunks status and /readyz say nothing of it.
	if v, err := fleet.LoadSchemaVersions(ctx, c.router); err != nil || v.Compare != "router" || v.Database != nil || v.String() != "" {
		t.Fatalf("LoadSchemaVersions through the router: %+v, %v", v, err)
	}
	for _, sh := range c.shards {
		var status string
		if err := sh.conn.QueryRow(ctx, "select string_agg(payment_id || ':' || status, ',' order by payment_id) from "+def.Table).Scan(&status); err != nil {
			t.Fatal(err)
		}
		want := "1:captured,2:captured,3:captured"
		if sh == home {
			want = "1:on_hold,2:captured,3:on_hold"
		}
		if status != want {
			t.Errorf("shard %s: %s, want %s", sh.name, status, want)
		}
	}
	// Its undo through the router: registered on the job's shard, as a job
	// of the same tenant, and run there by the change's inverse.
	undo, err := driver.JobRef{Tenant: tenant, ID: "h1"}.RegisterUndo(ctx, c.router, "")
	if err != nil || !undo.Created || undo.JobID != "h1-undo" || undo.Change != "hold" || fmt.Sprint(undo.Targets) != "[1 3]" {
		t.Fatalf("RegisterUndo through the router: %+v, %v", undo, err)
	}
	if res, err = (driver.JobRef{Tenant: tenant, ID: "h1-undo"}).RunChunk(ctx, c.router, nil); err != nil || !res.Done || fmt.Sprint(res.Processed) != "[1 3]" {
		t.Fatalf("RunChunk of the undo through the router: %+v, %v", res, err)
	}
	var restored string
	if err := home.conn.QueryRow(ctx, "select string_agg(payment_id || ':' || status || ':' || lock_version, ',' order by payment_id) from "+def.Table).Scan(&restored); err != nil ||
		restored != "1:captured:2,2:captured:0,3:captured:2" {
		t.Fatalf("shard %s after the undo: %s, %v", home.name, restored, err)
	}
	// An unknown change is the shard's refusal, as it is.
	if _, err := driver.RegisterChange(ctx, c.router, "nope", plan); err == nil || err.Error() != "invalid: change: there is no change nope (chunks change list)" {
		t.Fatalf("RegisterChange of no change through the router: %v", err)
	}
}
