package cli

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestTwoDrainProcesses starts two chunks drain processes on one 64-target
// job at the same moment: both succeed (one that meets the 500 ms bound on
// the job row is run again: twoDrains), and together they report every id
// exactly once, the same ids as the audit in the database.
func TestTwoDrainProcesses(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 3, 10} {
		t.Run(fmt.Sprintf("chunk_size=%d", size), func(t *testing.T) {
			t.Parallel()
			j := seedJob(t, newLab(t), "rush", 64, size)
			all, calls := twoDrains(t, j.lab.Lab, j.ID, 64)
			slices.Sort(all)
			if want := j.ids(0, 64); !reflect.DeepEqual(all, want) {
				t.Fatalf("the two drains reported %v together, want each of %v once", all, want)
			}
			// Every chunk is one call of one of them; the other's last
			// call only learns that the job is done.
			if chunks := (64 + size - 1) / size; calls != chunks+1 {
				t.Fatalf("%d calls together, want %d chunks + 1", calls, chunks)
			}
			j.wantAuditIDs(t, all)
			j.wantState(t, 64)
		})
	}
}

// twoDrains runs two chunks drain --json processes on job at the same
// moment and returns the ids they report together, and their calls. Each
// ends done at next_index n with its ids in id order; or, on a loaded
// machine, with the contract's bounded wait on the job row (exit 1, lock
// timeout after 500 ms, its committed chunks reported on stdout), and is
// then run again once both ended, as an operator would: the ids and calls
// of every run count, so exactly once is still what the caller checks.
func twoDrains(t *testing.T, l *clitest.Lab, job string, n int) (all []int64, calls int) {
	t.Helper()
	procs := []*clitest.Proc{l.Start(t, clitest.Options{}, "drain", "--json", job), l.Start(t, clitest.Options{}, "drain", "--json", job)}
	results := make([]clitest.Result, len(procs))
	for i, p := range procs {
		results[i] = p.Wait(t)
	}
	for i, r := range results {
		if r.Code == 1 && strings.Contains(r.Stderr, "lock timeout after 500ms: waited for the job row") {
			t.Logf("drain %c waited 500 ms for the job row and stopped, as the contract bounds it (a loaded machine): %s; running it again", 'A'+i, r.Stdout)
			partial := decode[driver.DrainResult](t, r)
			all, calls = append(all, partial.Processed...), calls+partial.Calls
			r = l.Chunks(t, "drain", "--json", job)
		}
		wantOK(t, r)
		res := decode[driver.DrainResult](t, r)
		if res.NextIndex != n || !res.Done {
			t.Fatalf("want next_index %d and done, got %+v", n, res)
		}
		if !slices.IsSorted(res.Processed) {
			t.Fatalf("one drain's ids are not in id order: %v", res.Processed)
		}
		t.Logf("drain %c: %d calls, %d ids", 'A'+i, res.Calls, len(res.Processed))
		all, calls = append(all, res.Processed...), calls+res.Calls
	}
	return all, calls
}

// TestDrainWorkers drains one job with three workers in one process: the
// combined result has every id once, in id order, and the calls summed.
func TestDrainWorkers(t *testing.T) {
	t.Parallel()
	j := seedJob(t, newLab(t), "rush", 64, 4)
	// 16 chunks, and the two workers that did not run the last one each end
	// with a call that only learns that the job is done.
	wantJSON(t, j.lab.Chunks(t, "drain", "--workers", "3", "--json", j.ID),
		driver.DrainResult{Calls: 16 + 2, Processed: j.ids(0, 64), NextIndex: 64, Done: true})
	j.wantState(t, 64)
}

// TestConcurrentMigrate starts eight chunks migrate processes on the same
// new schema at once: all succeed, and the schema has the tables and the
// five functions, each once.
func TestConcurrentMigrate(t *testing.T) {
	t.Parallel()
	schema := pgtest.NewSchemaName(t)
	admin := pgtest.Connect(t, pgtest.DSN())
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "drop schema if exists "+schema+" cascade"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	var exists bool
	if err := admin.QueryRow(ctx, "select to_regnamespace($1) is not null", schema).Scan(&exists); err != nil || exists {
		t.Fatalf("schema %s exists before the test: %t, %v", schema, exists, err)
	}
	procs := make([]*clitest.Proc, 8)
	for i := range procs {
		procs[i] = clitest.Start(t, clitest.Options{}, "migrate", "--dsn", pgtest.DSN(), "--schema", schema, "--json")
	}
	results := make([]clitest.Result, len(procs))
	for i, p := range procs {
		results[i] = p.Wait(t)
	}
	var version int
	if err := admin.QueryRow(ctx, "select version from "+schema+".schema_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 1 {
		t.Fatalf("schema_version %d", version)
	}
	for _, r := range results {
		wantMigrated(t, r, migrated{Schema: schema, Version: version, Owner: "postgres"})
	}

	rows, _ := admin.Query(ctx, "select tablename::text from pg_tables where schemaname = $1 order by 1", schema)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"approval_policy", "campaign_jobs", "campaign_progress", "campaigns", "change_audit", "change_chunks", "change_jobs", "change_targets", "change_writer", "changes", "job_approval", "job_archive", "job_audit", "job_change", "job_ends", "job_kind", "job_progress", "job_queue", "job_skips", "jobs", "orders", "proposals", "schema_version", "workers"}; !reflect.DeepEqual(tables, want) {
		t.Fatalf("tables %v, want %v", tables, want)
	}
	for _, fn := range []struct{ signature, result string }{
		{"register(jsonb)", "boolean"},
		{"inspect_job(text)", "jsonb"},
		{"cancel_chunk(text, jsonb)", "jsonb"},
		{"run_chunk(text)", "jsonb"},
		{"report(text)", "jsonb"},
	} {
		var got *string
		if err := admin.QueryRow(ctx, "select pg_get_function_result(to_regprocedure($1))",
			schema+"."+fn.signature).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == nil || *got != fn.result {
			t.Errorf("%s.%s returns %v, want %s", schema, fn.signature, got, fn.result)
		}
	}
	// One function per signature: the contract's five and the tenant-scoped
	// overloads of three of them, nothing created twice.
	var signatures string
	if err := admin.QueryRow(ctx, `select string_agg(proname || '(' || oidvectortypes(proargtypes) || ')', ' ' order by proname, oidvectortypes(proargtypes))
		from pg_proc where pronamespace = to_regnamespace($1)
		and proname in ('register', 'inspect_job', 'cancel_chunk', 'run_chunk', 'report')`, schema).Scan(&signatures); err != nil {
		t.Fatal(err)
	}
	if want := "cancel_chunk(text, jsonb) inspect_job(text) inspect_job(text, text) register(jsonb) report(text) report(text, text) run_chunk(text) run_chunk(text, text)"; signatures != want {
		t.Fatalf("functions named register, inspect_job, cancel_chunk, run_chunk, report: %s; want %s", signatures, want)
	}
}

// wantAuditIDs fails unless the ids of the job's audit, in ordinal order,
// are reported.
func (j *job) wantAuditIDs(t testing.TB, reported []int64) {
	t.Helper()
	audit := []int64{}
	for _, row := range j.state(t).Audit {
		audit = append(audit, row.ID)
	}
	if !reflect.DeepEqual(audit, reported) {
		t.Fatalf("audit ids %v, reported %v", audit, reported)
	}
}
