package fleet

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	fleetapi "github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Only transient errors of a chunk make its job rest and come back: 40001,
// 40P01, 55P03, 57014, 57P01 to 57P03 and class 08. Any other error, here
// raised by a trigger on orders, rolls the chunk back and pauses the job
// with the reason and the SQLSTATE, as a conflict does (issue 35, item 17):
// a trigger's P0001, an ASSERT's P0004 (which PL/pgSQL's OTHERS does not
// catch), 42702, 22003, 23505, 42501, 23502 and the rest. The SQL and Go's
// fleet.TransientChunkError agree on each.
func TestSQLRunNextPausesOnPermanentErrors(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	jobs := newJobs(t, l, "a", 4, 2)
	before := pgtest.MustString(t, l.Conn, "select jsonb_agg(o order by id)::text from orders o")

	transient := []string{"40001", "40P01", "55P03", "57014", "57P01", "57P02", "57P03", "08000", "08006", "08P01"}
	permanent := []string{"P0001", "P0004", "42702", "22003", "23505", "42501", "23502", "23514", "42P01", "53100",
		"53200", "25006", "40002", "57P04", "XX000", "0A000"}
	for _, code := range append(transient, permanent...) {
		raise := fmt.Sprintf("raise exception 'trigger says no (%[1]s)' using errcode = '%[1]s'", code)
		if code == "P0004" {
			raise = "assert false, 'trigger says no (P0004)'" // a real ASSERT
		}
		l.Exec(t, `create or replace function fail_orders() returns trigger language plpgsql as $$
			begin
			  `+raise+`;
			  return new;
			end $$`)
		// (CREATE OR REPLACE TRIGGER is PostgreSQL 14's; the matrix runs 13.)
		l.Exec(t, "drop trigger if exists orders_fail on orders")
		l.Exec(t, "create trigger orders_fail before update on orders for each row execute function fail_orders()")
		l.Exec(t, `update job_queue set paused = false, pause_reason = null, paused_at = null, paused_by = null,
			visible_at = now() - interval '1 s'`)

		p := pass(t, l.Conn, "w-9", 0, 60000)
		message := fmt.Sprintf("trigger says no (%s)", code)
		if code == "55P03" { // run_chunk says which job and which lock, with the same SQLSTATE
			message = "job a: lock timeout after 500ms: waited for an order of this chunk (another transaction holds a lock on one of the orders " +
				fmt.Sprintf("%d, %d)", jobs[0].Targets[0].ID, jobs[0].Targets[1].ID)
		}
		if p == nil || p.JobID != "a" || p.SQLState != code || p.Err != message || len(p.Processed) != 0 {
			t.Fatalf("%s: pass %+v, want job a rolled back with %s %q", code, p, code, message)
		}
		wantTransient := slices.Contains(transient, code)
		if got := fleetapi.TransientChunkError(code); got != wantTransient {
			t.Errorf("%s: fleet.TransientChunkError says %v, want %v", code, got, wantTransient)
		}
		s := l.status(t)["a"]
		switch {
		case wantTransient:
			if p.Paused || p.RestMs != 60000 || p.Conflict() || p.PausedByError() {
				t.Errorf("%s: pass %+v, want a rest of 60000 ms, no pause", code, p)
			}
			if s.State != fleetapi.StateQueued || s.PauseReason != nil || s.VisibleAt == nil || !s.VisibleAt.After(time.Now().Add(50*time.Second)) {
				t.Errorf("%s: status %+v, want queued, resting for a minute", code, s)
			}
		default:
			if !p.Paused || p.RestMs != 0 || p.Conflict() || !p.PausedByError() {
				t.Errorf("%s: pass %+v, want a pause by an error, no rest", code, p)
			}
			want := message + " (SQLSTATE " + code + ")"
			if s.State != fleetapi.StatePaused || s.PauseReason == nil || *s.PauseReason != want ||
				s.PausedBy == nil || *s.PausedBy != "w-9" || s.PausedAt == nil {
				t.Errorf("%s: status %+v, want paused by w-9 with the reason %q", code, s, want)
			}
			if p := pass(t, l.Conn, "w-9", 0, 60000); p != nil {
				t.Errorf("%s: the paused job ran again: %+v", code, p)
			}
		}
	}
	if after := pgtest.MustString(t, l.Conn, "select jsonb_agg(o order by id)::text from orders o"); after != before {
		t.Fatalf("the failed chunks changed orders:\n%s\n%s", before, after)
	}
	if n := pgtest.MustInt(t, l.Conn, "select count(*) from job_audit"); n != 0 || l.nextIndex(t, "a") != 0 {
		t.Fatalf("the failed chunks left %d audit rows, next_index %d", n, l.nextIndex(t, "a"))
	}

	// Once its cause is gone and the job resumed, it runs to its end.
	l.Exec(t, "drop trigger orders_fail on orders")
	l.Exec(t, "select resume_job('a')")
	for range 2 {
		if p := pass(t, l.Conn, "w-9", 0, 60000); p == nil || p.Err != "" || len(p.Processed) != 2 {
			t.Fatalf("after the resume: %+v, want a chunk of 2", p)
		}
	}
	l.wantFinished(t, jobs)
}

// A chunks worker pauses a job of a declared change whose table has a
// BEFORE UPDATE trigger that raises an exception (P0001), with the
// trigger's message and the SQLSTATE as the reason: chunks status, the
// status page, api/status and the worker's metrics show it, and the other
// jobs go on. A job whose trigger raises a serialization failure (40001)
// is still retried every --retry-delay, and finishes once the trigger lets
// it. After the trigger is fixed and the paused job resumed, it finishes
// too (issue 35, item 17).
func TestWorkerPausesOnPermanentError(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	shop := l.shopPayments(t, 6)
	guard := func(body string) {
		l.Exec(t, fmt.Sprintf(`create or replace function %s.guard() returns trigger language plpgsql as $$
			begin
			  %s
			  return new;
			end $$`, shop, body))
	}
	guard(`if new.payment_id = 1 then
			    raise exception 'payment 1 is frozen by the finance team';
			  end if;
			  if new.payment_id = 4 then
			    raise exception 'could not serialize access to payment 4' using errcode = 'serialization_failure';
			  end if;`)
	l.Exec(t, fmt.Sprintf("create trigger guard before update on %[1]s.payments for each row execute function %[1]s.guard()", shop))
	l.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": "hold", "table": "%s.payments", "key": "payment_id",
	  "version": "lock_version", "when": {"status": "captured"}, "set": {"status": "on_hold"}}`, shop))
	l.registerPayments(t, "hold", "frozen", 1, 2)
	l.registerPayments(t, "hold", "retried", 4, 5)
	l.registerPayments(t, "hold", "fine", 6)

	w := l.worker(t, "w1", "--http", "127.0.0.1:0", "--poll", "50ms", "--retry-delay", "100ms")
	base := servedURL(t, w)
	w.WaitLine(t, 0, 20*time.Second, "chunk failed with an error that retrying does not fix", "job=frozen", "sqlstate=P0001",
		"payment 1 is frozen by the finance team")
	first := w.WaitLine(t, 0, 20*time.Second, "chunk failed with a transient error", "job=retried", "sqlstate=40001")
	w.WaitLine(t, first+1, 20*time.Second, "chunk failed with a transient error", "job=retried", "sqlstate=40001") // retried
	pgtest.WaitFor(t, 20*time.Second, "the job fine to finish", func() bool { return l.status(t)["fine"].State == fleetapi.StateDone })

	reason := "payment 1 is frozen by the finance team (SQLSTATE P0001)"
	st := l.status(t)
	if s := st["frozen"]; s.State != fleetapi.StatePaused || s.PauseReason == nil || *s.PauseReason != reason ||
		s.PausedBy == nil || *s.PausedBy != "w1" || s.NextIndex != 0 {
		t.Fatalf("status of frozen: %+v, want paused by w1: %s", s, reason)
	}
	if s := st["retried"]; s.State != fleetapi.StateQueued && s.State != fleetapi.StateRunning || s.PauseReason != nil || s.NextIndex != 0 {
		t.Fatalf("status of retried: %+v, want queued (resting) or running, not paused", s)
	}
	if r := l.Chunks(t, "status", "--all"); r.Code != 0 || !clitest.ContainsAll(r.Stdout, "frozen", "paused", "by w1: "+reason) {
		t.Fatalf("chunks status: %v", r)
	}
	for path, parts := range map[string][]string{
		"":           {`data-job="frozen"`, "by w1: " + reason},
		"api/status": {`"job_id":"frozen"`, `"state":"paused"`, `"pause_reason":"` + reason + `"`},
	} {
		if r := fetch(t, "GET", base+path); r.code != 200 || !clitest.ContainsAll(r.body, parts...) {
			t.Errorf("GET /%s: %d, lacks one of %q:\n%s", path, r.code, parts, r.body)
		}
	}

	// The trigger lets payment 4 through: retried finishes; frozen stays
	// paused until it is resumed.
	guard(`if new.payment_id = 1 then
			    raise exception 'payment 1 is frozen by the finance team';
			  end if;`)
	pgtest.WaitFor(t, 20*time.Second, "the job retried to finish", func() bool { return l.status(t)["retried"].State == fleetapi.StateDone })
	if s := l.status(t)["frozen"]; s.State != fleetapi.StatePaused {
		t.Fatalf("status of frozen after the others finished: %+v", s)
	}
	transient := 0
	for _, line := range w.Lines() {
		if clitest.ContainsAll(line, "chunk failed with a transient error", "job=retried", "sqlstate=40001") {
			transient++
		}
	}
	fams := metrics(t, base+"metrics")
	for _, c := range []struct {
		name   string
		labels []string
		want   int
	}{
		{"chunks_error_pauses_total", nil, 1},
		{"chunks_conflicts_total", nil, 0},
		{"chunks_chunk_errors_total", []string{"sqlstate", "40001"}, transient},
		{"chunks_chunk_duration_seconds", []string{"outcome", "error_pause"}, 1},
		{"chunks_chunk_duration_seconds", []string{"outcome", "error"}, transient},
		{"chunks_chunks_committed_total", nil, 3},
	} {
		if got := sample(t, fams, c.name, c.labels...); got != float64(c.want) {
			t.Errorf("%s%v = %v, want %d", c.name, c.labels, got, c.want)
		}
	}

	guard("")
	if r := l.Chunks(t, "resume", "frozen"); r.Code != 0 {
		t.Fatalf("chunks resume frozen: %v", r)
	}
	pgtest.WaitFor(t, 20*time.Second, "the job frozen to finish once resumed", func() bool { return l.status(t)["frozen"].State == fleetapi.StateDone })
	if got := pgtest.MustString(t, l.Conn, fmt.Sprintf("select string_agg(status, ' ' order by payment_id) from %s.payments", shop)); got !=
		"on_hold on_hold captured on_hold on_hold on_hold" {
		t.Fatalf("payments: %s", got)
	}
	stopWorkers(t, w)
	if got := w.Wait(t).Stdout; !strings.Contains(got, "0 jobs paused after a conflict, 1 after another error") {
		t.Errorf("the worker's summary: %q", got)
	}
}
