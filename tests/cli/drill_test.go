package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/chunks-dev/chunks/driver"
)

// The drills run on a 40-target job, 10 per chunk, at its first, a middle
// and its last chunk.
const (
	drillTargets   = 40
	drillChunkSize = 10
)

var drillChunks = []struct {
	name  string
	chunk int // the chunk's number: it starts at target chunk*10
}{{"first", 0}, {"middle", 2}, {"last", 3}}

// advance runs chunks one at a time with chunks run --json until next_index
// is at, checking each result and the database after it.
func (j *job) advance(t testing.TB, at int) {
	t.Helper()
	for from := 0; from < at; from = j.chunkEnd(from) {
		end := j.chunkEnd(from)
		wantJSON(t, j.lab.Chunks(t, "run", "--json", j.ID),
			driver.ChunkResult{Processed: j.ids(from, end), NextIndex: end, Done: end == len(j.Targets)})
	}
	j.wantState(t, at)
}

// drainToEnd resumes the job from committed with chunks drain --json and
// checks that every approved order changed exactly once, in the database.
func (j *job) drainToEnd(t testing.TB, committed int) {
	t.Helper()
	n := len(j.Targets)
	calls := (n - committed + j.ChunkSize - 1) / j.ChunkSize
	if calls == 0 {
		calls = 1 // a call that only learns that the job is done
	}
	wantJSON(t, j.lab.Chunks(t, "drain", "--json", j.ID),
		driver.DrainResult{Calls: calls, Processed: j.ids(committed, n), NextIndex: n, Done: true})
	j.wantState(t, n)
}

// TestCrashDrill kills chunks run with SIGKILL at each hook point of the
// first, a middle and the last chunk: before COMMIT nothing of that chunk
// is visible, after it the chunk is there; chunks drain then finishes the
// job with every approved order changed exactly once.
func TestCrashDrill(t *testing.T) {
	t.Parallel()
	crashDrills(t, func(t *testing.T) *job { return seedJob(t, newLab(t), "festival", drillTargets, drillChunkSize) })
}

// TestUndoCrashDrill is the crash-drill matrix on an undo job: the undo of
// a finished 40-target job whose 37 matching orders it restores, 10 per
// chunk (its last chunk has 7).
func TestUndoCrashDrill(t *testing.T) {
	t.Parallel()
	crashDrills(t, func(t *testing.T) *job { return seedUndo(t, newLab(t), drillTargets, drillChunkSize) })
}

// TestChangeCrashDrill is the crash-drill matrix on a job of a declared
// change: the cancellation of a user's table of orders' shape, declared
// with chunks change define and registered with chunks register --change;
// after each kill and the resume, every row is changed exactly once by
// change_audit (wantState reads it and the user's table).
func TestChangeCrashDrill(t *testing.T) {
	t.Parallel()
	crashDrills(t, func(t *testing.T) *job {
		l := newLab(t)
		shop := l.UserSchema(t, `create table %[1]s.tickets(id integer primary key, tenant text not null, qty integer not null,
		  state text not null, revision integer not null)`)
		def := filepath.Join(t.TempDir(), "change.json")
		if err := os.WriteFile(def, []byte(fmt.Sprintf(`{"name": "cancel_ticket", "table": "%s.tickets", "key": "id", "tenant": "tenant",
		  "version": "revision", "expect": ["qty"], "when": {"state": "pending"}, "set": {"state": "cancelled"}}`, shop)), 0o600); err != nil {
			t.Fatal(err)
		}
		wantOK(t, l.Chunks(t, "change", "define", def))
		return seedJobOf(t, l, shop+".tickets", "cancel_ticket", "festival", drillTargets, drillChunkSize)
	})
}

// crashDrills runs the drill of each hook point at the first, a middle and
// the last chunk of a job that seed makes, registered and not run yet.
func crashDrills(t *testing.T, seed func(t *testing.T) *job) {
	for _, point := range driver.Points {
		for _, at := range drillChunks {
			t.Run(point+"/"+at.name, func(t *testing.T) {
				t.Parallel()
				j := seed(t)
				from := at.chunk * drillChunkSize
				j.advance(t, from)

				r := j.lab.Chunks(t, "run", "--crash-at", point, j.ID)
				if r.Signal != syscall.SIGKILL {
					t.Fatalf("want the process killed by SIGKILL, got %v", r)
				}
				if r.Stdout != "" || !strings.Contains(r.Stderr, "--crash-at "+point+": killing this process") {
					t.Fatalf("want nothing on stdout and the drill's notice on stderr, got %v", r)
				}
				committed := from
				if point == driver.AfterCommit {
					committed = j.chunkEnd(from)
				}
				// At once, while the server may not have noticed the dead
				// client yet, and again after its transaction is over.
				j.wantState(t, committed)
				j.lab.waitUnlocked(t)
				j.wantState(t, committed)
				j.drainToEnd(t, committed)
			})
		}
	}
}

// failDrills put each hook point's --fail-at at one chunk, so that the
// four points cover the first, a middle and the last chunk between them
// (TestFailAfterCommitHuman adds after-commit at the first).
var failDrills = []struct {
	point string
	chunk int
}{{driver.AfterOrders, 0}, {driver.AfterAudit, 2}, {driver.AfterCheckpoint, 3}, {driver.AfterCommit, 3}}

// TestFailDrill makes the hook at each point fail: exit 1 with the hook's
// error on stderr; before COMMIT the chunk rolls back, after it the chunk
// is committed and --json still prints it.
func TestFailDrill(t *testing.T) {
	t.Parallel()
	for _, drill := range failDrills {
		t.Run(drill.point, func(t *testing.T) {
			t.Parallel()
			j := seedJob(t, newLab(t), "festival", drillTargets, drillChunkSize)
			from := drill.chunk * drillChunkSize
			j.advance(t, from)

			r := j.lab.Chunks(t, "run", "--json", "--fail-at", drill.point, j.ID)
			hookError := "chunks: --fail-at " + drill.point + ": drill failure\n"
			committed := from
			if drill.point == driver.AfterCommit {
				end := j.chunkEnd(from)
				committed = end
				if r.Code != 1 || r.Stderr != hookError {
					t.Fatalf("want exit 1 and %q on stderr, got %v", hookError, r)
				}
				got := decode[driver.ChunkResult](t, r)
				want := driver.ChunkResult{Processed: j.ids(from, end), NextIndex: end, Done: end == len(j.Targets)}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("stdout %+v, want the committed %+v", got, want)
				}
			} else {
				wantFailure(t, r, 1)
				if r.Stderr != hookError {
					t.Fatalf("want %q on stderr, got %v", hookError, r)
				}
			}
			j.wantState(t, committed)
			j.drainToEnd(t, committed)
		})
	}
}

// TestFailAfterCommitHuman: without --json, an after-commit failure still
// says what was committed on stdout.
func TestFailAfterCommitHuman(t *testing.T) {
	t.Parallel()
	j := seedJob(t, newLab(t), "festival", drillTargets, drillChunkSize)
	r := j.lab.Chunks(t, "run", "--fail-at", driver.AfterCommit, j.ID)
	var ids []string
	for _, id := range j.ids(0, 10) {
		ids = append(ids, fmt.Sprint(id))
	}
	want := fmt.Sprintf("job festival: cancelled %s; next_index 10\n", strings.Join(ids, " "))
	if r.Code != 1 || r.Stdout != want {
		t.Fatalf("want exit 1 and stdout %q, got %v", want, r)
	}
	wantErrorLine(t, r, "--fail-at after-commit: drill failure")
	j.wantState(t, 10)
}
