package cli

import (
	"math"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/internal/bench"
	"github.com/chunks-dev/chunks/internal/pgtest"
)

// TestBenchSmoke runs chunks bench very briefly on the test database: it
// asserts what the benchmark counts and checks (round trips, the
// baseline's equivalence, every scenario present), never a timing.
func TestBenchSmoke(t *testing.T) {
	t.Parallel()
	r := runWith(t, opts{timeout: 3 * time.Minute}, "bench", "--dsn", pgtest.DSN(), "--duration", "100ms", "--scale=false", "--json")
	report := decode[bench.Report](t, r)
	if !report.Equivalent {
		t.Fatal("the baseline does not leave what RunChunk leaves")
	}
	want := map[string]float64{ // round trips per chunk
		"ceiling/1 conn":   1,
		"chunks/size 1":    2,
		"chunks/size 5":    2,
		"chunks/size 10":   2,
		"baseline/size 1":  2*1 + 5,
		"baseline/size 10": 2*10 + 5,
	}
	seen := map[string]bool{}
	for _, x := range report.Results {
		key := x.Scenario + "/" + x.Variant
		seen[x.Scenario] = true
		if x.Chunks == 0 {
			t.Errorf("%s: no chunks measured", key)
		}
		if rt, ok := want[key]; ok {
			// RunChunk costs exactly 2, always. The others prepare each
			// statement once per connection (pgx's statement cache), and a
			// job's last baseline chunk is shorter: allow them that much.
			if x.Scenario == "chunks" && x.RoundTrips != rt || math.Abs(x.RoundTrips-rt) > rt/4 {
				t.Errorf("%s: %.2f round trips per chunk, want %v", key, x.RoundTrips, rt)
			}
		}
	}
	for _, s := range []string{"ceiling", "chunks", "baseline", "network ceiling", "network chunks", "network baseline", "parallel"} {
		if !seen[s] {
			t.Errorf("scenario %s is missing", s)
		}
	}
	if report.DrainPeakRSSMB <= 0 {
		t.Errorf("drain peak memory %.1f MB", report.DrainPeakRSSMB)
	}
}
