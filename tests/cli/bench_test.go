package cli

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/internal/app/bench"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// benchExamples are the lines of chunks bench --help's example, as
// TestHelpExamples rewrites them: TestBenchSmoke runs the second, and
// TestBenchTypedDSNOnly the first with the third's scenarios (a server of
// its own, and pacing, which only such a server has), each with --duration
// 100ms --scale=false (a smoke run; --json output decoded instead of
// redirected).
var benchExamples = []string{
	`chunks bench`,
	`chunks bench --dsn "$CHUNKS_DSN" --duration 5s --json > bench.json`,
	`chunks bench --scenario ceiling --scenario pacing`,
}

// TestBenchSmoke runs chunks bench very briefly on the test database: it
// asserts what the benchmark counts and checks (round trips, the
// baseline's equivalence, every scenario present), never a timing. Its
// worker and drain processes get the DSN, which carries a password (the
// test server does not ask for it), through their environment: none shows
// it in its argv.
func TestBenchSmoke(t *testing.T) {
	t.Parallel()
	secret := "SECRETPW-" + pgtest.NewSchemaName(t)
	dsn := pgtest.DSN() + " password=" + secret
	r, kids := watchChildren(t, clitest.Start(t, clitest.Options{Timeout: 5 * time.Minute}, "bench", "--dsn", dsn, "--duration", "100ms", "--scale=false", "--json"))
	report := decode[bench.Report](t, r)
	if len(kids) < 8 {
		t.Errorf("saw %d child processes of the bench, want its workers and its drain: %v", len(kids), kids)
	}
	wantDSNInEnvironment(t, kids, dsn, secret)
	if strings.Contains(r.Stdout+r.Stderr, secret) {
		t.Errorf("the bench printed the password:\n%v", r)
	}
	if !report.Equivalent || !report.FloorEquivalent {
		t.Fatalf("the baseline (%t) or the floor (%t) does not leave what RunChunk leaves", report.Equivalent, report.FloorEquivalent)
	}
	// Round trips per chunk: RunChunk costs exactly 1 without a fault and 2
	// with one, always. The others also prepare each statement once per connection (pgx's
	// statement cache), which a 100 ms run does not amortize, and a 64-target
	// job's last baseline chunk of 10 is 4 orders (6 x 25 + 13 over 7).
	least := map[string]float64{
		"ceiling/1 conn":                          1,
		"baseline/size 1":                         2*1 + 5,
		"baseline/size 10":                        (6*25 + 13) / 7.0,
		"floor/size 10, one statement, no checks": 1,
	}
	seen := map[string]bool{}
	for _, x := range report.Results {
		key := x.Scenario + "/" + x.Variant
		seen[x.Scenario] = true
		if x.Chunks == 0 {
			t.Errorf("%s: no chunks measured", key)
		}
		if want := map[bool]float64{false: 1, true: 2}[strings.Contains(x.Variant, "fault")]; x.Scenario == "chunks" && x.RoundTrips != want {
			t.Errorf("%s: %.2f round trips per chunk, want exactly %.0f", key, x.RoundTrips, want)
		}
		// The server's own counts are read database-wide, and the tests
		// running beside this one commit too: only check they are there.
		if (key == "ceiling/1 conn" || key == "chunks/size 10" || x.Scenario == "fleet") && x.CommitsPerChunk < 1 {
			t.Errorf("%s: %.2f commits per chunk, want at least 1", key, x.CommitsPerChunk)
		}
		// WAL bytes per chunk, for the floor's goal rows: the whole
		// server's WAL, so only its presence is checked.
		if (key == "chunks/size 10" || x.Scenario == "floor" || strings.HasPrefix(key, "fleet/1 worker")) && x.WALBytesPerChunk <= 0 {
			t.Errorf("%s: %.0f WAL bytes per chunk, want more than 0", key, x.WALBytesPerChunk)
		}
		if rt, ok := least[key]; ok && x.RoundTrips < rt-0.01 {
			t.Errorf("%s: %.2f round trips per chunk, want at least %.2f", key, x.RoundTrips, rt)
		}
	}
	for _, s := range []string{"ceiling", "chunks", "floor", "baseline", "network ceiling", "network chunks", "network baseline", "parallel", "fleet", "fleet pickup", "fleet takeover", "loop", "application"} {
		if !seen[s] {
			t.Errorf("scenario %s is missing", s)
		}
	}
	// pgbench as the application: alone, beside the loop, beside chunks;
	// its latencies measured, and rows changed beside it but not alone.
	apps := 0
	for _, x := range report.Results {
		if x.Scenario != "application" {
			continue
		}
		apps++
		if alone := strings.HasPrefix(x.Variant, "pgbench alone"); x.P99Ms <= 0 || x.P50Ms <= 0 || (x.Orders == 0) != alone {
			t.Errorf("application/%s: %+v", x.Variant, x)
		}
	}
	if apps != 3 {
		t.Errorf("%d application rows, want 3 (alone, beside the loop, beside chunks)", apps)
	}
	// The drain's own peak (VmHWM), not the bench's: wait4's ru_maxrss of a
	// child os/exec started is never below the parent's peak (40 MB and
	// more here), whatever the drain used.
	if report.DrainPeakRSSMB <= 0 || report.DrainPeakRSSMB >= 30 {
		t.Errorf("drain peak memory %.1f MB, want its own, under 30 MB", report.DrainPeakRSSMB)
	}
	// The declared change beside the built-in cancellation, and its delete
	// (archived), sizes 1 and 10, in this run: its six rows (one round trip
	// per chunk each, every chunk of 10 but a job's last changing 10 rows)
	// and its four goal rows.
	declared := map[string]bench.Result{}
	for _, x := range report.Results {
		if x.Scenario == "declared change" {
			declared[x.Variant] = x
		}
	}
	for _, v := range []string{"built-in, size 1", "declared, size 1", "built-in, size 10", "declared, size 10",
		"delete, archived, size 1", "delete, archived, size 10"} {
		x, ok := declared[v]
		if !ok || x.Chunks == 0 || x.RoundTrips != 1 || x.MeanMs <= 0 || x.Orders < x.Chunks || x.Orders > 10*x.Chunks {
			t.Errorf("declared change/%s: %+v (present: %t)", v, x, ok)
		}
	}
	if len(declared) != 6 {
		t.Errorf("declared change: rows %v, want 6", declared)
	}
	goals := 0
	for _, g := range report.Ratios {
		if strings.HasPrefix(g.Name, "declared change vs the built-in cancellation, time per chunk") && g.Goal == "<= 1.1" && g.Value > 0 ||
			strings.HasPrefix(g.Name, "a declared change's delete (archived) vs its update, time per chunk") && g.Goal == "<= 1.5" && g.Value > 0 {
			goals++
		}
	}
	if goals != 4 {
		t.Errorf("%d goal rows of the declared change and its delete, want 4 (sizes 1 and 10): %+v", goals, report.Ratios)
	}
	// Issue 26's goals, each a row with its goal and a measured value.
	want := map[string]string{
		"chunks vs baseline, chunks/s, no delay, size 1":                                                                       ">= 1.5",
		"chunks vs baseline, chunks/s, no delay, size 10":                                                                      ">= 2",
		"WAL bytes per chunk, chunks (size 10) vs the floor":                                                                   "<= 1.5",
		"WAL bytes per chunk, fleet (1 worker process) vs the floor":                                                           "<= 1.5",
		"fleet (1 worker process) vs RunChunk, chunks/s, same jobs":                                                            ">= 0.95",
		"a declared change, 2 worker processes vs the DBA's loop on 2 connections, rows/s (chunk and batch 10)":                ">= 1.0",
		"a declared change, 2 worker processes vs the DBA's loop on 2 connections, rows/s (chunk and batch 100)":               ">= 0.9",
		"a declared change, 2 worker processes vs the DBA's loop on 2 connections, rows/s (chunk and batch 1000)":              ">= 0.9",
		"a declared change, 2 worker processes vs the loop with chunks' audit on 2 connections, rows/s (chunk and batch 10)":   ">= 0.9",
		"a declared change, 2 worker processes vs the loop with chunks' audit on 2 connections, rows/s (chunk and batch 100)":  ">= 0.9",
		"a declared change, 2 worker processes vs the loop with chunks' audit on 2 connections, rows/s (chunk and batch 1000)": ">= 0.9",
		"the application's lost TPS per changed row/s, beside chunks vs beside the DBA's loop (chunk and batch 10)":            "<= 1.0",
		"the application's p99, beside chunks vs beside the DBA's loop (chunk and batch 10)":                                   "<= 1.0",
	}
	for _, g := range report.Ratios {
		// The application's toll may be below 0 in a smoke run (it ran
		// faster beside the change than alone): measured, but not > 0.
		measured := g.Value > 0 || (strings.HasPrefix(g.Name, "the application's lost TPS") && !math.IsNaN(g.Value) && !math.IsInf(g.Value, 0))
		if goal, ok := want[g.Name]; ok && g.Goal == goal && measured {
			delete(want, g.Name)
		}
	}
	if len(want) != 0 {
		t.Errorf("goal rows missing or without a value: %v (report: %+v)", want, report.Ratios)
	}
	// Those goals are measured side by side: each the median of its
	// pair's rounds, every round measured.
	goalOf := map[string]string{
		"RunChunk vs the baseline script, size 1":                                                                           "chunks vs baseline, chunks/s, no delay, size 1",
		"RunChunk vs the baseline script, size 10":                                                                          "chunks vs baseline, chunks/s, no delay, size 10",
		"RunChunk (size 10) vs the floor":                                                                                   "", // no goal (issue 37 retired it)
		"one worker process vs RunChunk (size 10), the same number of jobs":                                                 "fleet (1 worker process) vs RunChunk, chunks/s, same jobs",
		"a declared change's jobs, 2 worker processes vs the DBA's loop, 2 connections (chunk and batch 10)":                "a declared change, 2 worker processes vs the DBA's loop on 2 connections, rows/s (chunk and batch 10)",
		"a declared change's jobs, 2 worker processes vs the DBA's loop, 2 connections (chunk and batch 100)":               "a declared change, 2 worker processes vs the DBA's loop on 2 connections, rows/s (chunk and batch 100)",
		"a declared change's jobs, 2 worker processes vs the DBA's loop, 2 connections (chunk and batch 1000)":              "a declared change, 2 worker processes vs the DBA's loop on 2 connections, rows/s (chunk and batch 1000)",
		"a declared change's jobs, 2 worker processes vs the loop with chunks' audit, 2 connections (chunk and batch 10)":   "a declared change, 2 worker processes vs the loop with chunks' audit on 2 connections, rows/s (chunk and batch 10)",
		"a declared change's jobs, 2 worker processes vs the loop with chunks' audit, 2 connections (chunk and batch 100)":  "a declared change, 2 worker processes vs the loop with chunks' audit on 2 connections, rows/s (chunk and batch 100)",
		"a declared change's jobs, 2 worker processes vs the loop with chunks' audit, 2 connections (chunk and batch 1000)": "a declared change, 2 worker processes vs the loop with chunks' audit on 2 connections, rows/s (chunk and batch 1000)",
		"the application's lost TPS per changed row/s: beside chunks vs beside the DBA's loop (chunk and batch 10)":         "the application's lost TPS per changed row/s, beside chunks vs beside the DBA's loop (chunk and batch 10)",
		"the replica lag check, nothing throttling: with it vs without":                                                     "the replica lag check, nothing throttling: chunks/s with it vs without",
		"the declared change vs the built-in cancellation, size 1 (its time per chunk over the built-in's)":                 "declared change vs the built-in cancellation, time per chunk (one round trip each), size 1",
		"the declared change vs the built-in cancellation, size 10 (its time per chunk over the built-in's)":                "declared change vs the built-in cancellation, time per chunk (one round trip each), size 10",
	}
	if !seen["pacing"] { // no standby of its own with --dsn
		delete(goalOf, "the replica lag check, nothing throttling: with it vs without")
	}
	for _, p := range report.Pairs {
		goal, ok := goalOf[p.Name]
		if !ok {
			t.Errorf("unexpected pair %q", p.Name)
			continue
		}
		delete(goalOf, p.Name)
		// The application's toll can be negative in a round too short to
		// tell (the application ran faster beside a change than alone).
		notMeasured := func(v float64) bool { return v <= 0 }
		if p.Name == "the application's lost TPS per changed row/s: beside chunks vs beside the DBA's loop (chunk and batch 10)" {
			notMeasured = func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
		}
		if len(p.Rounds) != 3 || slices.ContainsFunc(p.Rounds, notMeasured) || p.A == "" || p.B == "" {
			t.Errorf("pair %q: %+v, want 3 measured rounds (a smoke run) and both variants named", p.Name, p)
		}
		for _, g := range report.Ratios {
			if g.Name == goal && g.Value != p.Median {
				t.Errorf("goal %q is %v, want its pair's median %v", goal, g.Value, p.Median)
			}
		}
	}
	if len(goalOf) != 0 {
		t.Errorf("pairs missing: %v", goalOf)
	}
}

// chunks bench without --dsn runs on a throwaway durable server of its own,
// whatever $CHUNKS_DSN and $DATABASE_URL say (a newcomer may have exported
// the demo's); a --dsn it cannot parse is refused without being shown.
func TestBenchTypedDSNOnly(t *testing.T) {
	t.Parallel()
	r := clitest.RunWith(t, clitest.Options{Timeout: 3 * time.Minute, Env: []string{"CHUNKS_DSN=" + unreachableDSN, "DATABASE_URL=" + unreachableDSN}},
		"bench", "--duration", "100ms", "--scale=false", "--scenario", "ceiling", "--scenario", "pacing", "--json")
	report := decode[bench.Report](t, r)
	if s := report.Settings; s["fsync"] != "on" || s["synchronous_commit"] != "on" || s["full_page_writes"] != "on" || s["checkpoint_timeout"] != "1h" || !report.Equivalent {
		t.Fatalf("bench without --dsn: settings %v, equivalent %t; want its own durable server", s, report.Equivalent)
	}
	var ran []string
	for _, x := range report.Results {
		if !slices.Contains(ran, x.Scenario) {
			ran = append(ran, x.Scenario)
		}
	}
	if !slices.Equal(ran, []string{"ceiling", "pacing"}) || len(report.Pairs) != 1 {
		t.Errorf("bench --scenario ceiling --scenario pacing ran %v and %d side-by-side pairs; want ceiling and pacing (with its pair) only", ran, len(report.Pairs))
	}
	r = clitest.Run(t, "bench", "--dsn", "host=h password = TopSecret port=abc")
	wantFailure(t, r, 2, "dsn: ", "the connection string is not shown")
	if strings.Contains(r.Stderr, "TopSecret") {
		t.Fatalf("bench shows the password of a DSN it cannot parse: %v", r)
	}
}
