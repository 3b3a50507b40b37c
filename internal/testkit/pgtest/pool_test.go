package pgtest

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/chunks-dev/chunks/driver"
)

func TestMain(m *testing.M) {
	if os.Getenv("PGTEST_REQUIRE_TOOL_CHILD") == "1" { // TestRequireTool's child needs no server
		os.Exit(m.Run())
	}
	Main(m)
}

// A schema goes back to the pool only when a test left nothing in it but
// rows and functions it added; anything else a test
// can change in it is seen, and the schema is dropped instead.
func TestPoolReusesOnlyWhatIsAsMigrated(t *testing.T) {
	ctx := context.Background()
	admin := Connect(t, DSN())
	p := takeSchema(t, admin)
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "drop schema if exists "+p.name+" cascade"); err != nil {
			t.Error(err)
		}
	})
	exec := func(t *testing.T, sql string) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// What every test leaves: rows in the tables, a declared change's
	// functions. Reset undoes it all.
	exec(t, "create schema if not exists pool_shop")
	t.Cleanup(func() { exec(t, "drop schema pool_shop cascade") })
	exec(t, "create table if not exists pool_shop.tickets(id bigint primary key, status text not null, lock_version int not null)")
	exec(t, "grant usage on schema pool_shop to "+p.name+"_writer")
	exec(t, "grant select, update on pool_shop.tickets to "+p.name+"_writer")
	exec(t, "set search_path = "+p.name)
	exec(t, `select define_change('{"name": "close", "table": "pool_shop.tickets", "key": "id", "version": "lock_version", "when": {"status": "open"}, "set": {"status": "closed"}}')`)
	exec(t, `select register('{"job_id": "j1", "tenant": "acme", "chunk_size": 1, "allow_partial": true, "targets": [{"id": 1, "revision": 0, "qty": 1}]}')`)
	exec(t, "reset search_path")
	if same, err := reset(ctx, admin, p); err != nil || !same {
		t.Fatalf("after rows, a sequence and a change: reset says same %t, error %v; want the schema as migrated", same, err)
	}
	if n := MustInt(t, admin, "select count(*)::int from "+p.name+".jobs"); n != 0 {
		t.Fatalf("jobs after reset: %d rows", n)
	}
	if n := MustInt(t, admin, "select count(*)::int from pg_proc where pronamespace = $1::regnamespace and proname like '%close'", p.name); n != 0 {
		t.Fatalf("the change's %d functions are still there after reset", n)
	}

	// What makes a schema unlike its migrate: each is seen.
	for _, tc := range []struct{ change, undo string }{
		{"grant select on " + p.name + ".jobs to public", "revoke select on " + p.name + ".jobs from public"},
		{"grant execute on function " + p.name + ".inspect_job(text) to pg_monitor", "revoke execute on function " + p.name + ".inspect_job(text) from pg_monitor"},
		{"alter function " + p.name + ".inspect_job(text) set work_mem = '1MB'", "alter function " + p.name + ".inspect_job(text) reset work_mem"},
		{"create trigger t before update on " + p.name + ".orders for each row execute function suppress_redundant_updates_trigger()", "drop trigger t on " + p.name + ".orders"},
		{"alter table " + p.name + ".orders add column extra int", "alter table " + p.name + ".orders drop column extra"},
		{"create index on " + p.name + ".orders (qty)", "drop index " + p.name + ".orders_qty_idx"},
		{"alter role " + p.name + "_writer createrole", "alter role " + p.name + "_writer nocreaterole"},
		{"grant pg_monitor to " + p.name + "_writer", "revoke pg_monitor from " + p.name + "_writer"},
		{"update " + p.name + ".change_writer set role = role || ''", ""}, // a row rewritten alike is not a change
		{"delete from " + p.name + ".schema_version", "insert into " + p.name + ".schema_version select " + strconv.Itoa(driver.SchemaVersion())},
		{"create view " + p.name + ".v as select 1", "drop view " + p.name + ".v"},
		{"create sequence " + p.name + ".s", "drop sequence " + p.name + ".s"},
	} {
		exec(t, tc.change)
		same, err := reset(ctx, admin, p)
		if err != nil {
			t.Fatalf("%s: reset: %v", tc.change, err)
		}
		if want := tc.undo == ""; same != want {
			t.Errorf("%s: reset says same %t, want %t", tc.change, same, want)
		}
		if tc.undo != "" {
			exec(t, tc.undo)
		}
		if same, err := reset(ctx, admin, p); err != nil || !same {
			t.Fatalf("after undoing %s: same %t, error %v", tc.change, same, err)
		}
	}
}
