package fleet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Issue 37, item 2: a declared change's chunks adapt. With a standby that
// applies WAL 2 s late and --max-replica-lag 1500ms, the pacer holds the
// worker and its chunks shrink from the approved 1,000 rows; once the delay
// is lifted they grow back to the approved size within 10 s. Each chunk's
// size is on the record (change_chunks), one after another, and every row
// is changed exactly once.
func TestAdaptiveChunkSize(t *testing.T) {
	t.Parallel()
	l, _, standby := replicated(t, 2*time.Second)
	const n = 10000
	shop := l.shopPayments(t, n)
	l.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": "hold", "table": "%s.payments", "key": "payment_id", "version": "lock_version",
	  "when": {"status": "captured"}, "set": {"status": "on_hold"}}`, shop))
	l.Exec(t, fmt.Sprintf(`select register_change('hold', jsonb_build_object('job_id', 'big', 'tenant', 't', 'chunk_size', 1000, 'allow_partial', true,
	  'targets', (select jsonb_agg(jsonb_build_object('payment_id', payment_id, 'lock_version', 0)) from %s.payments)))`, shop))
	replayed(t, l, standby, 10*time.Second)

	sizes := func() []int {
		var out []int
		for _, s := range strings.Fields(pgtest.MustString(t, l.Conn,
			"select coalesce(string_agg(size::text, ' ' order by first_ordinal), '') from change_chunks where job_id = 'big'")) {
			var v int
			fmt.Sscan(s, &v)
			out = append(out, v)
		}
		return out
	}
	w := l.worker(t, "w1", "--max-replica-lag", "1500ms", "--poll", "100ms")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chunk sizes: %v\nworker:\n%s", sizes(), strings.Join(w.Lines(), "\n"))
		}
	})
	pgtest.WaitFor(t, 30*time.Second, "chunks of at most 250 rows while the standby lags", func() bool {
		s := sizes()
		return len(s) > 0 && s[len(s)-1] <= 250
	})
	w.WaitLine(t, 0, 5*time.Second, "held by the pacer: smaller chunks of declared changes")
	shrunk := sizes()
	if shrunk[0] != 1000 {
		t.Fatalf("the first chunk (before any hold) has %d rows, want the approved 1000: %v", shrunk[0], shrunk)
	}

	if err := standby.SetApplyDelay(ctx, 0); err != nil {
		t.Fatal(err)
	}
	lifted := time.Now()
	pgtest.WaitFor(t, 10*time.Second, "chunks of the approved 1,000 rows again", func() bool {
		s := sizes()
		return len(s) > len(shrunk) && s[len(s)-1] == 1000 || l.nextIndex(t, "big") == n
	})
	grown := sizes()
	t.Logf("chunk sizes: %v (lifted after %d chunks; back to 1000 in %v)", grown, len(shrunk), time.Since(lifted).Round(time.Millisecond))
	if last := grown[len(grown)-1]; last != 1000 && l.nextIndex(t, "big") != n {
		t.Fatalf("not back to 1000 rows: %v", grown)
	}
	pgtest.WaitFor(t, 30*time.Second, "the job to finish", func() bool { return l.nextIndex(t, "big") == n })
	stopWorkers(t, w)
	// Exactly once, the chunks one after another, as verify proves.
	if got := pgtest.MustString(t, l.Conn, fmt.Sprintf(`select jsonb_build_array((select count(*) from change_audit where job_id = 'big'),
	    (select count(*) from %s.payments where status = 'on_hold' and lock_version = 1), verify_job('big') -> 'sound')::text`, shop)); got != fmt.Sprintf("[%d, %d, true]", n, n) {
		t.Fatalf("audit rows, rows changed once, verify: %s", got)
	}
}
