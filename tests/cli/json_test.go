package cli

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestJSONOutput walks one job through every command with --json and reads
// each output into the driver's struct (or the documented object), with the
// exact values, and checks them against the database.
func TestJSONOutput(t *testing.T) {
	t.Parallel()
	l := newLab(t)

	var version int
	if err := l.Conn.QueryRow(ctx, "select version from "+l.Name+".schema_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	wantMigrated(t, l.Chunks(t, "migrate", "--json"), migrated{Schema: l.Name, Version: version, Owner: "postgres"})

	// manifest: no database (no --dsn), targets sorted by id.
	items := `[{"id": 30, "revision": 2, "qty": 3}, {"id": 10, "revision": 0, "qty": 1}, {"id": 20, "revision": 7, "qty": 1000},
		{"id": 70, "revision": 1, "qty": 2}, {"id": 50, "revision": 0, "qty": 9}, {"id": 60, "revision": 4, "qty": 4},
		{"id": 40, "revision": 2147483646, "qty": 5}]`
	targets := []driver.Target{
		{ID: 10, Revision: 0, Qty: 1},
		{ID: 20, Revision: 7, Qty: 1000},
		{ID: 30, Revision: 2, Qty: 3},
		{ID: 40, Revision: 2147483646, Qty: 5},
		{ID: 50, Revision: 0, Qty: 9},
		{ID: 60, Revision: 4, Qty: 4},
		{ID: 70, Revision: 1, Qty: 2},
	}
	plan := driver.Plan{JobID: "job-7", Tenant: "t_1", Targets: targets, ChunkSize: 3, AllowPartial: true}
	r := clitest.RunWith(t, clitest.Options{Stdin: items}, "manifest", "--job-id", "job-7", "--tenant", "t_1", "--chunk-size", "3", "--allow-partial", "-")
	wantJSON(t, r, plan)
	r2 := clitest.RunWith(t, clitest.Options{Stdin: items}, "--json", "manifest", "--job-id", "job-7", "--tenant", "t_1", "--chunk-size", "3", "--allow-partial", "-")
	if r2.Stdout != r.Stdout {
		t.Fatalf("manifest with --json printed %q, without %q", r2.Stdout, r.Stdout)
	}

	// register: the manifest's output, from stdin; then again.
	l.Exec(t, `insert into orders (id, tenant, qty, state, revision)
		select x.id, 't_1', x.qty, 'pending', x.revision from jsonb_to_recordset($1::jsonb) as x(id int, revision int, qty int)`, items)
	wantRegistered(t, l.Conn, clitest.RunWith(t, clitest.Options{Stdin: r.Stdout}, append(l.Globals(), "register", "--json", "-")...), registered{JobID: "job-7", Created: true})
	wantRegistered(t, l.Conn, clitest.RunWith(t, clitest.Options{Stdin: r.Stdout}, append(l.Globals(), "register", "--json", "-")...), registered{JobID: "job-7", Created: false})
	var stored struct {
		Tenant    string
		Targets   []driver.Target
		ChunkSize int
		NextIndex int
	}
	if err := l.Conn.QueryRow(ctx, "select tenant, targets, chunk_size, next_index from jobs where job_id = 'job-7'").
		Scan(&stored.Tenant, &stored.Targets, &stored.ChunkSize, &stored.NextIndex); err != nil {
		t.Fatal(err)
	}
	if stored.Tenant != "t_1" || !reflect.DeepEqual(stored.Targets, targets) || stored.ChunkSize != 3 || stored.NextIndex != 0 {
		t.Fatalf("stored job %+v", stored)
	}

	// inspect: the job; null for an unknown one.
	wantJSON(t, l.Chunks(t, "inspect", "--json", "job-7"),
		&driver.Job{JobID: "job-7", Tenant: "t_1", Targets: targets, ChunkSize: 3, NextIndex: 0})
	if r := l.Chunks(t, "inspect", "--json", "job-8"); r.Code != 0 || r.Stdout != "null\n" || r.Stderr != "" {
		t.Fatalf("want null and exit 0 for an unknown job, got %v", r)
	}

	// run, then drain one chunk, then drain the rest.
	wantJSON(t, l.Chunks(t, "run", "--json", "job-7"), driver.ChunkResult{Processed: []int64{10, 20, 30}, NextIndex: 3})
	wantJSON(t, l.Chunks(t, "inspect", "--json", "job-7"),
		&driver.Job{JobID: "job-7", Tenant: "t_1", Targets: targets, ChunkSize: 3, NextIndex: 3})
	wantJSON(t, l.Chunks(t, "drain", "--json", "--max-chunks", "1", "job-7"),
		driver.DrainResult{Calls: 1, Processed: []int64{40, 50, 60}, NextIndex: 6})
	wantJSON(t, l.Chunks(t, "drain", "--json", "job-7"),
		driver.DrainResult{Calls: 1, Processed: []int64{70}, NextIndex: 7, Done: true})
	wantJSON(t, l.Chunks(t, "drain", "--json", "job-7"),
		driver.DrainResult{Calls: 1, Processed: []int64{}, NextIndex: 7, Done: true})
	wantJSON(t, l.Chunks(t, "run", "--json", "job-7"), driver.ChunkResult{Processed: []int64{}, NextIndex: 7, Done: true})

	// report, after one order drifted and one went missing.
	l.Exec(t, "update orders set qty = qty - 1, revision = revision + 1 where id = 20")
	l.Exec(t, "delete from orders where id = 60")
	wantJSON(t, l.Chunks(t, "report", "--json", "job-7"), driver.JobReport{
		Approved: []int64{10, 20, 30, 40, 50, 60, 70}, Committed: []int64{10, 20, 30, 40, 50, 60, 70}, Remaining: []int64{},
		Matching: []int64{10, 30, 40, 50, 70}, Drifted: []int64{20}, Missing: []int64{60},
	})
	var audit int
	if err := l.Conn.QueryRow(ctx, "select count(*) from job_audit where job_id = 'job-7'").Scan(&audit); err != nil || audit != 7 {
		t.Fatalf("%d audit rows, %v", audit, err)
	}
}

// TestGlobalFlagsAnyPlace: --json, --schema and --dsn work before and after
// the command name, with the same output; typed in both places, the one
// after the command name wins; CHUNKS_DSN stands in for --dsn.
func TestGlobalFlagsAnyPlace(t *testing.T) {
	t.Parallel()
	j := seedJob(t, newLab(t), "j", 5, 2)
	dsn, schema := pgtest.DSN(), j.lab.Name
	wantJSON(t, j.lab.Chunks(t, "run", "--json", "j"), driver.ChunkResult{Processed: j.ids(0, 2), NextIndex: 2})
	report := driver.JobReport{Approved: j.ids(0, 5), Committed: j.ids(0, 2), Remaining: j.ids(2, 5),
		Matching: j.ids(0, 2), Drifted: []int64{}, Missing: []int64{}}

	before := clitest.Run(t, "--json", "--schema", schema, "--dsn", dsn, "report", "j")
	wantJSON(t, before, report)
	for _, args := range [][]string{
		{"report", "--json", "--schema", schema, "--dsn", dsn, "j"},
		{"--dsn", dsn, "report", "--schema", schema, "--json", "j"},
		{"--schema", schema, "report", "--dsn", dsn, "--json", "j"},
		{"--json", "--dsn", unreachableDSN, "--schema", "no_such_schema", "report", "--dsn", dsn, "--schema", schema, "j"},
	} {
		if r := clitest.Run(t, args...); r.Code != 0 || r.Stderr != "" || r.Stdout != before.Stdout {
			t.Fatalf("want the same output as %v, got %v", before.Args, r)
		}
	}
	if human := wantOK(t, clitest.Run(t, "--schema", schema, "--dsn", dsn, "report", "j")); json.Valid([]byte(human)) {
		t.Fatalf("without --json report printed JSON: %s", human)
	}

	// The same for a command that writes: one chunk each way.
	wantJSON(t, clitest.Run(t, "--json", "--dsn", dsn, "--schema", schema, "run", "j"),
		driver.ChunkResult{Processed: j.ids(2, 4), NextIndex: 4})
	wantJSON(t, clitest.Run(t, "drain", "--dsn", dsn, "--json", "--schema", schema, "j"),
		driver.DrainResult{Calls: 1, Processed: j.ids(4, 5), NextIndex: 5, Done: true})

	// CHUNKS_DSN instead of --dsn, and --dsn over CHUNKS_DSN.
	job := &driver.Job{JobID: "j", Tenant: j.Tenant, Targets: j.Targets, ChunkSize: 2, NextIndex: 5}
	wantJSON(t, clitest.RunWith(t, clitest.Options{Env: []string{"CHUNKS_DSN=" + dsn}}, "--schema", schema, "inspect", "--json", "j"), job)
	wantJSON(t, clitest.RunWith(t, clitest.Options{Env: []string{"CHUNKS_DSN=" + unreachableDSN}}, "--dsn", dsn, "--schema", schema, "inspect", "--json", "j"), job)
	wantFailure(t, clitest.RunWith(t, clitest.Options{Env: []string{"CHUNKS_DSN=" + unreachableDSN}}, "--schema", schema, "inspect", "--json", "j"), 1, "127.0.0.1")
	j.wantState(t, 5)
}
