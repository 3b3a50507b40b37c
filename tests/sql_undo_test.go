package tests

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// runToEnd runs the job's chunks with run_chunk until it is done.
func runToEnd(t testing.TB, s *pgtest.Schema, jobID string) {
	t.Helper()
	for range 65 {
		if queryString(t, s, "select (run_chunk($1) ->> 'done')", jobID) == "true" {
			return
		}
	}
	t.Fatalf("job %s is not done after 65 chunks", jobID)
}

// undoneFestival is job "fest" (orders 1..10, revision 3, qty 2, 3 per
// chunk) run to its end, after which order 2's qty changed, 5 was
// re-opened and 7 deleted.
func undoneFestival(t testing.TB) *pgtest.Schema {
	t.Helper()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "fest", "acme", 1, 10, 3)
	runToEnd(t, s, "fest")
	s.Exec(t, "update orders set qty = 3, revision = revision + 1 where id = 2")
	s.Exec(t, "update orders set state = 'pending', revision = revision + 1 where id = 5")
	s.Exec(t, "delete from orders where id = 7")
	return s
}

// An undo restores exactly the orders that are still as the job left
// them, once, with one audit row each; drifted and missing orders are
// untouched. It is a job like any other: queued, chunked by the job's chunk
// size, reported with its own matching rule.
func TestSQLUndoRestoresMatchingOrdersOnce(t *testing.T) {
	t.Parallel()
	s := undoneFestival(t)
	want := `{"job_id": "fest-undo", "undoes": "fest", "created": true, "targets": [1, 3, 4, 6, 8, 9, 10],
	  "drifted": [2, 5], "missing": [7]}`
	sameJSON(t, "register_undo", pgtest.MustString(t, s.Conn, "select register_undo('fest')::text"), want)
	sameJSON(t, "the undo job", pgtest.MustString(t, s.Conn, "select inspect_job('fest-undo')::text"), `{"job_id": "fest-undo",
	  "tenant": "acme", "chunk_size": 3, "next_index": 0, "targets": [{"id": 1, "revision": 4, "qty": 2},
	  {"id": 3, "revision": 4, "qty": 2}, {"id": 4, "revision": 4, "qty": 2}, {"id": 6, "revision": 4, "qty": 2},
	  {"id": 8, "revision": 4, "qty": 2}, {"id": 9, "revision": 4, "qty": 2}, {"id": 10, "revision": 4, "qty": 2}]}`)
	sameJSON(t, "kind", queryString(t, s, "select jsonb_agg(k)::text from job_kind k"),
		`[{"job_id": "fest-undo", "kind": "restore", "undoes": "fest"}]`)
	if got := queryString(t, s, "select (visible_at <= now() and not paused)::text from job_queue where job_id = 'fest-undo'"); got != "true" {
		t.Fatalf("the undo is not queued for the fleet: %s", got)
	}
	drifted := ordersOf(t, s, 1, 10)

	// The same undo again: nothing changes.
	before := everything(t, s)
	again := strings.Replace(want, `"created": true`, `"created": false`, 1)
	sameJSON(t, "register_undo again", pgtest.MustString(t, s.Conn, "select register_undo('fest', 'fest-undo')::text"), again)
	unchangedAll(t, s, "register_undo again", before)

	sameJSON(t, "chunk 1", pgtest.MustString(t, s.Conn, "select run_chunk('fest-undo')::text"),
		`{"processed": [1, 3, 4], "next_index": 3, "done": false}`)
	sameJSON(t, "report after one chunk", pgtest.MustString(t, s.Conn, "select report('fest-undo')::text"),
		`{"approved": [1, 3, 4, 6, 8, 9, 10], "committed": [1, 3, 4], "remaining": [6, 8, 9, 10],
		  "matching": [1, 3, 4], "drifted": [], "missing": []}`)
	runToEnd(t, s, "fest-undo")
	sameJSON(t, "orders", ordersOf(t, s, 1, 10), `[[1, "acme", 2, "pending", 5], [2, "acme", 3, "cancelled", 5],
	  [3, "acme", 2, "pending", 5], [4, "acme", 2, "pending", 5], [5, "acme", 2, "pending", 5],
	  [6, "acme", 2, "pending", 5], [8, "acme", 2, "pending", 5], [9, "acme", 2, "pending", 5],
	  [10, "acme", 2, "pending", 5]]`)
	if drifted == ordersOf(t, s, 1, 10) {
		t.Fatal("the undo changed nothing")
	}
	sameJSON(t, "audit of the undo", auditOf(t, s, "fest-undo"), `[[0, 1, 4, 5, 2], [1, 3, 4, 5, 2], [2, 4, 4, 5, 2],
	  [3, 6, 4, 5, 2], [4, 8, 4, 5, 2], [5, 9, 4, 5, 2], [6, 10, 4, 5, 2]]`)
	sameJSON(t, "audit of the job", auditOf(t, s, "fest"), `[[0, 1, 3, 4, 2], [1, 2, 3, 4, 2], [2, 3, 3, 4, 2],
	  [3, 4, 3, 4, 2], [4, 5, 3, 4, 2], [5, 6, 3, 4, 2], [6, 7, 3, 4, 2], [7, 8, 3, 4, 2], [8, 9, 3, 4, 2], [9, 10, 3, 4, 2]]`)
	sameJSON(t, "report of the undo", pgtest.MustString(t, s.Conn, "select report('fest-undo')::text"),
		`{"approved": [1, 3, 4, 6, 8, 9, 10], "committed": [1, 3, 4, 6, 8, 9, 10], "remaining": [],
		  "matching": [1, 3, 4, 6, 8, 9, 10], "drifted": [], "missing": []}`)
	sameJSON(t, "report of the job", pgtest.MustString(t, s.Conn, "select report('fest')::text"),
		`{"approved": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "committed": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "remaining": [],
		  "matching": [], "drifted": [1, 2, 3, 4, 5, 6, 8, 9, 10], "missing": [7]}`)
	sameJSON(t, "lineage of the job", pgtest.MustString(t, s.Conn, "select job_lineage('fest')::text"),
		`{"job_id": "fest", "kind": "cancel", "undoes": null, "undone_by": "fest-undo"}`)
	sameJSON(t, "lineage of the undo", pgtest.MustString(t, s.Conn, "select job_lineage('fest-undo')::text"),
		`{"job_id": "fest-undo", "kind": "restore", "undoes": "fest", "undone_by": null}`)
	if got := pgtest.MustString(t, s.Conn, "select coalesce(job_lineage('nope')::text, 'null')"); got != "null" {
		t.Fatalf("lineage of an unknown job: %s", got)
	}

	// Once: the finished undo changes nothing more, and neither does
	// registering it again.
	before = everything(t, s)
	sameJSON(t, "finished undo", pgtest.MustString(t, s.Conn, "select run_chunk('fest-undo')::text"),
		`{"processed": [], "next_index": 7, "done": true}`)
	sameJSON(t, "register_undo after the undo ran", pgtest.MustString(t, s.Conn, "select register_undo('fest')::text"), again)
	unchangedAll(t, s, "the finished undo", before)

	// The same from Go.
	u, err := driver.JobRef{ID: "fest"}.RegisterUndo(ctx, s.Conn, "")
	if err != nil || u.Created || u.JobID != "fest-undo" || len(u.Targets) != 7 || len(u.Drifted) != 2 || len(u.Missing) != 1 {
		t.Fatalf("RegisterUndo again: %+v %v", u, err)
	}
	l, err := driver.JobRef{ID: "fest"}.Lineage(ctx, s.Conn)
	if err != nil || l == nil || l.Kind != driver.KindCancel || l.UndoneBy == nil || *l.UndoneBy != "fest-undo" || l.Undoes != nil {
		t.Fatalf("Lineage: %+v %v", l, err)
	}
	if l, err := (driver.JobRef{ID: "nope"}).Lineage(ctx, s.Conn); l != nil || err != nil {
		t.Fatalf("Lineage of an unknown job: %+v %v", l, err)
	}
	unchangedAll(t, s, "the Go calls", before)
}

// CONTRACT §4 holds for an undo as for any job: a chunk of an undo whose
// audit was tampered with is a conflict and changes nothing; so is an
// order that changed since the undo was registered.
func TestSQLUndoIsCheckedLikeAnyJob(t *testing.T) {
	t.Parallel()
	s := undoneFestival(t)
	s.Exec(t, "select register_undo('fest')")
	s.Exec(t, "select run_chunk('fest-undo')")
	s.Exec(t, "update job_audit set new_revision = 9 where job_id = 'fest-undo' and ordinal = 1")
	refuse(t, s, "CH409", "job fest-undo: audit row 1 is (id 3, revision 4 -> 9, qty 2), approved (id 3, revision 4 -> 5, qty 2)",
		"select run_chunk($1)::text", "fest-undo")
	s.Exec(t, "update job_audit set new_revision = 5 where job_id = 'fest-undo' and ordinal = 1")
	s.Exec(t, "update orders set state = 'paid', revision = revision + 1 where id = 6")
	refuse(t, s, "CH409", "order 6: state is paid", "select run_chunk($1)::text", "fest-undo")
	s.Exec(t, "update orders set state = 'cancelled' where id = 6")
	refuse(t, s, "CH409", "order 6: revision is 5, approved 4", "select run_chunk($1)::text", "fest-undo")
	// An undo's order must be cancelled to be restored: pending is a state
	// it does not take.
	s.Exec(t, "update orders set state = 'pending', revision = 4 where id = 6")
	refuse(t, s, "CH409", "order 6: state is pending", "select run_chunk($1)::text", "fest-undo")
}

// Undo refuses, with a conflict and nothing written: an unknown job, an
// undo, a job that can still make progress, an id taken by another job, a
// job undone under another id, a job with nothing to undo, an unsound job.
// Bad ids are invalid input. A paused job can be undone; then it is never
// given back to the fleet.
func TestSQLUndoRefusals(t *testing.T) {
	t.Parallel()
	s := undoneFestival(t)
	s.Exec(t, "select register_undo('fest')")
	registerJob(t, s, "queued", "acme", 21, 4, 2)
	s.Exec(t, "select run_chunk('queued')")
	registerJob(t, s, "idle", "acme", 31, 4, 2)
	s.Exec(t, "select run_chunk('idle')")
	s.Exec(t, "delete from job_queue where job_id = 'idle'")
	registerJob(t, s, "fresh", "acme", 41, 4, 2)
	s.Exec(t, "select pause_job('fresh')")
	registerJob(t, s, "drifted", "acme", 51, 2, 2)
	runToEnd(t, s, "drifted")
	s.Exec(t, "update orders set state = 'paid', revision = revision + 1 where id between 51 and 52")
	registerJob(t, s, "corrupt", "acme", 61, 2, 2)
	runToEnd(t, s, "corrupt")
	s.Exec(t, "update job_audit set qty = 9 where job_id = 'corrupt' and ordinal = 1")
	long := strings.Repeat("x", 60)
	s.Exec(t, `select register(jsonb_build_object('job_id', $1::text, 'tenant', 'acme', 'chunk_size', 1, 'allow_partial', true,
		'targets', '[{"id": 99, "qty": 1, "revision": 0}]'::jsonb))`, long)

	for _, c := range []struct{ code, msg, sql string }{
		{"CH409", "job nope: not found", "select register_undo('nope')::text"},
		{"CH409", "job fest-undo: is the undo of fest; an undo is not undone (register a new job to cancel those orders again)",
			"select register_undo('fest-undo')::text"},
		{"CH409", "job fest: already undone by fest-undo", "select register_undo('fest', 'second')::text"},
		{"CH409", "job fest-undo: already registered, and not as the undo of queued", "select register_undo('queued', 'fest-undo')::text"},
		{"CH409", "job queued: can still make progress (next_index 2 of 4, not paused): pause it first (chunks pause queued)",
			"select register_undo('queued')::text"},
		{"CH409", "job idle: can still make progress (next_index 2 of 4, not paused): pause it first (chunks pause idle)",
			"select register_undo('idle')::text"},
		{"CH409", "job fresh: nothing to undo: no chunk of it is committed", "select register_undo('fresh')::text"},
		{"CH409", "job drifted: nothing to undo: none of its 2 committed orders is as it left it (drifted [51, 52], missing [])",
			"select register_undo('drifted')::text"},
		{"CH409", "job corrupt: audit row 1 is (id 62, revision 3 -> 4, qty 9), approved (id 62, revision 3 -> 4, qty 2)",
			"select register_undo('corrupt')::text"},
		{"22023", "new_job_id: job " + long + " is 60 characters, too long to name its undo " + long +
			"-undo (at most 64): give the undo's id", "select register_undo('" + long + "')::text"},
		{"22023", "new_job_id: must differ from job_id queued", "select register_undo('queued', 'queued')::text"},
		{"22023", `new_job_id: must be 1 to 64 ASCII letters, digits, _ or -, got "a b"`, "select register_undo('queued', 'a b')::text"},
		{"22023", "job_id: must be 1 to 64 ASCII letters, digits, _ or -, got null", "select register_undo(null)::text"},
	} {
		before := everything(t, s)
		refuse(t, s, c.code, c.msg, c.sql)
		unchangedAll(t, s, c.sql, before)
	}

	// Paused, it can be undone; the undone job is never resumed.
	s.Exec(t, "select pause_job('queued')")
	sameJSON(t, "undo of the paused job", pgtest.MustString(t, s.Conn, "select register_undo('queued')::text"),
		`{"job_id": "queued-undo", "undoes": "queued", "created": true, "targets": [21, 22], "drifted": [], "missing": []}`)
	for _, sql := range []string{"select resume_job('queued')::text", "select pause_job_after('queued', 1)::text"} {
		action := map[bool]string{true: "resume", false: "run"}[strings.Contains(sql, "resume")]
		refuse(t, s, "CH409", "job queued: undone by queued-undo; nothing to "+action+" (register a new job to cancel its orders)", sql)
	}
	// A job whose id is too long for the default can be named: then it
	// is judged like any other (here: idle, so it can still make progress).
	refuse(t, s, "CH409", "job "+long+": can still make progress (next_index 0 of 1, not paused): pause it first (chunks pause "+long+")",
		"select register_undo($1, 'long-undo')::text", long)

	// An order at the largest revision cannot be restored: refused, naming it.
	s.Exec(t, "insert into orders values (70, 'acme', 1, 'pending', 2147483646)")
	s.Exec(t, `select register('{"job_id": "max", "tenant": "acme", "chunk_size": 1, "allow_partial": true,
		"targets": [{"id": 70, "revision": 2147483646, "qty": 1}]}')`)
	runToEnd(t, s, "max")
	refuse(t, s, "CH409", "job max: order 70: revision is 2147483647, the largest an order can have: it cannot be restored",
		"select register_undo('max')::text")

	// From Go: the kinds, and a bad id refused before the server.
	_, err := driver.JobRef{ID: "nope"}.RegisterUndo(ctx, s.Conn, "")
	if !errors.Is(err, driver.ErrConflict) || err.Error() != "conflict: job nope: not found" {
		t.Fatalf("RegisterUndo of an unknown job: %v", err)
	}
	var dErr *driver.Error
	_, err = driver.JobRef{ID: "fest"}.RegisterUndo(ctx, s.Conn, "no way")
	if !errors.Is(err, driver.ErrInvalid) || !errors.As(err, &dErr) || dErr.Err != nil ||
		err.Error() != `invalid: new_job_id: must be 1 to 64 ASCII letters, digits, _ or -, got "no way"` {
		t.Fatalf("RegisterUndo with a bad id: %v", err)
	}
	_, err = driver.JobRef{ID: long}.RegisterUndo(ctx, s.Conn, "")
	if !errors.Is(err, driver.ErrInvalid) || !strings.Contains(err.Error(), "new_job_id: job "+long+" is 60 characters") {
		t.Fatalf("RegisterUndo without an id it can derive: %v", err)
	}
	out, err := json.Marshal(driver.Undo{})
	if err != nil || string(out) != `{"job_id":"","undoes":"","created":false,"targets":[],"drifted":[],"missing":[]}` {
		t.Fatalf("zero Undo: %s %v", out, err)
	}
}

// Concurrent undos of one job: under one id, one creates it and the other
// finds it (never an error); under two ids, one wins and the other is a
// conflict. The job row lock serializes them.
func TestSQLConcurrentUndo(t *testing.T) {
	t.Parallel()
	for _, ids := range [][2]string{{"u", "u"}, {"u1", "u2"}} {
		t.Run(ids[0]+"+"+ids[1], func(t *testing.T) {
			t.Parallel()
			s := undoneFestival(t)
			var wg sync.WaitGroup
			results := make([]driver.Undo, 2)
			errs := make([]error, 2)
			start := make(chan struct{})
			for i, id := range ids {
				conn := pgtest.Connect(t, s.DSN)
				wg.Go(func() {
					<-start
					results[i], errs[i] = driver.JobRef{ID: "fest"}.RegisterUndo(ctx, conn, id)
				})
			}
			close(start)
			wg.Wait()
			created := 0
			for i := range 2 {
				switch {
				case errs[i] == nil && results[i].Created:
					created++
				case errs[i] == nil && ids[0] == ids[1]:
				case errs[i] != nil && ids[0] != ids[1] && errors.Is(errs[i], driver.ErrConflict) &&
					strings.HasPrefix(errs[i].Error(), "conflict: job fest: already undone by u"):
				default:
					t.Errorf("undo %d as %s: %+v %v", i, ids[i], results[i], errs[i])
				}
			}
			if created != 1 || queryString(t, s, "select count(*)::text from job_kind") != "1" {
				t.Fatalf("%d undos created, %s kind rows; want one", created, queryString(t, s, "select count(*)::text from job_kind"))
			}
		})
	}
}
