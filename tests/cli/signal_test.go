package cli

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// slowChunks makes every chunk of the lab take at least seconds: a trigger
// on orders sleeps in each chunk's UPDATE. While it sleeps, the backend's
// application_name is "slow chunk <lab>" (set locally, so it ends with the
// transaction).
func (l *lab) slowChunks(t *testing.T, seconds float64) {
	t.Helper()
	l.Exec(t, fmt.Sprintf(`create function slow() returns trigger language plpgsql as $$
		begin
		  perform set_config('application_name', 'slow chunk %s', true);
		  perform pg_sleep(%g);
		  return null;
		end $$;
		create trigger slow after update on orders for each statement execute function slow()`, l.Name, seconds))
}

// waitInFlight waits until the job has committed next and its next chunk
// is in flight, sleeping in the trigger of slowChunks.
func (j *job) waitInFlight(t *testing.T, next int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ok bool
		if err := j.lab.Conn.QueryRow(ctx, `select (select next_index from jobs where job_id = $1) = $2
			and exists (select from pg_stat_activity where application_name = $3 and wait_event = 'PgSleep')`,
			j.ID, next, "slow chunk "+j.lab.Name).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no chunk of job %s in flight after next_index %d", j.ID, next)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDrainInterrupted sends a real SIGINT (and SIGTERM) to a chunks drain
// while its second chunk is in flight: that chunk is cancelled and rolls
// back, the progress bar is cleared, the first chunk's summary is printed
// as on success, and the exit status is 128 + the signal.
func TestDrainInterrupted(t *testing.T) {
	t.Parallel()
	t.Run("SIGINT on a terminal", func(t *testing.T) {
		t.Parallel()
		j := seedJob(t, newLab(t), "festival", 40, 10)
		j.lab.slowChunks(t, 1)
		term := newTerminal(t)
		p := clitest.Start(t, clitest.Options{Stderr: term.tty}, append(j.lab.Globals(), "drain", j.ID)...)
		j.waitInFlight(t, 10)
		p.Signal(t, syscall.SIGINT)
		r := p.Wait(t)
		screen := term.output(t)
		if r.Code != 130 {
			t.Fatalf("want exit 130, got %v\n--- terminal:\n%q", r, screen)
		}
		if want := fmt.Sprintf("job festival: 1 call cancelled %s; next_index 10\n", idRange(j.ids(0, 10))); r.Stdout != want {
			t.Fatalf("stdout %q, want %q", r.Stdout, want)
		}
		// The bar was drawn, in ids, and erased (a carriage return, blanks,
		// a carriage return) before the one line that says what happened.
		bar := regexp.MustCompile(`job festival: ids, \d+/s +(\d+)% \|[^|]*\| \((\d+)/40\)`).FindAllStringSubmatch(screen, -1)
		if len(bar) == 0 {
			t.Fatalf("no progress bar in ids on the terminal:\n%q", screen)
		}
		for _, m := range bar {
			percent, _ := strconv.Atoi(m[1])
			done, _ := strconv.Atoi(m[2])
			if done%10 != 0 || percent != done*100/40 {
				t.Fatalf("the bar's labels disagree: %q", m[0])
			}
		}
		tail := "chunks: interrupted by SIGINT: the chunk in flight, if any, was cancelled and rolled back; what this drain committed is printed above\r\n"
		if !regexp.MustCompile(`\r +\r` + regexp.QuoteMeta(tail) + `$`).MatchString(screen) {
			t.Fatalf("the terminal does not end with the bar cleared and then %q:\n%q", tail, screen)
		}
		j.lab.waitUnlocked(t)
		j.wantState(t, 10)
	})
	t.Run("SIGTERM with --json", func(t *testing.T) {
		t.Parallel()
		j := seedJob(t, newLab(t), "festival", 40, 10)
		j.lab.slowChunks(t, 1)
		p := j.lab.Start(t, clitest.Options{}, "drain", "--json", j.ID)
		j.waitInFlight(t, 10)
		p.Signal(t, syscall.SIGTERM)
		r := p.Wait(t)
		if r.Code != 143 {
			t.Fatalf("want exit 143, got %v", r)
		}
		wantErrorLine(t, r, "chunks: interrupted by SIGTERM: the chunk in flight, if any, was cancelled and rolled back")
		if got := decode[driver.DrainResult](t, r); got.Calls != 1 || got.NextIndex != 10 || got.Done || fmt.Sprint(got.Processed) != fmt.Sprint(j.ids(0, 10)) {
			t.Fatalf("stdout %+v, want the first chunk only", got)
		}
		j.lab.waitUnlocked(t)
		j.wantState(t, 10)
	})
}

// TestDrainWorkersLockTimeout: with chunks slower than the 500 ms lock
// bound, of two drainers one waits too long for the job row and fails with
// 55P03. The error is one line that names that drainer and says why; the
// summary is what the other one committed, and does not claim success.
func TestDrainWorkersLockTimeout(t *testing.T) {
	t.Parallel()
	j := seedJob(t, newLab(t), "rush", 40, 10)
	j.lab.slowChunks(t, 0.8)
	r := j.lab.Chunks(t, "drain", "--workers", "2", j.ID)
	if r.Code != 1 {
		t.Fatalf("want exit 1, got %v", r)
	}
	wantErrorLine(t, r)
	line := regexp.MustCompile(`^chunks: drainer [12] of 2: ERROR: job rush: lock timeout after 500ms: waited for the job row \(another transaction holds it: a chunk of this job in flight, or a session that locked it\) \(SQLSTATE 55P03\)\n$`)
	if !line.MatchString(r.Stderr) {
		t.Fatalf("stderr %q, want one line naming the drainer and the lock", r.Stderr)
	}
	m := regexp.MustCompile(`^job rush: (\d+) calls? cancelled (.*); next_index (\d+)\n$`).FindStringSubmatch(r.Stdout)
	if m == nil || strings.Contains(r.Stdout, "done") {
		t.Fatalf("stdout %q, want the summary without \"the job is done\"", r.Stdout)
	}
	next, _ := strconv.Atoi(m[3])
	if m[2] != idRange(j.ids(0, next)) {
		t.Fatalf("the summary says %s, want the ids up to next_index %d", m[2], next)
	}
	j.wantState(t, next)
}

// idRange is how the CLI prints a list of seedJob's ids: they are 3 apart,
// so never a range, only the ids one after the other.
func idRange(list []int64) string {
	if len(list) == 0 {
		return "none"
	}
	parts := make([]string, len(list))
	for i, id := range list {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, " ")
}
