package fleet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// earlierMains are the builds of main whose fleets this build upgrades: at
// schema version 10 (the writer), the first landed one (4c9e349, before
// issue 35's last fixes changed run_change_chunk's signature), the last
// one before issue 36 (keys of any shape) began, the last before the one
// path (report, check, undo and campaign check on orders_change()), and
// the last landed main before schema version 11 (d85e75f: a change's
// targets in jobs.targets, which migration 011 moves into change_targets);
// and the last landed main at schema version 11 (a1dd7f0: change_targets
// with its foreign key, campaign status with drift, no campaign_progress
// nor job_ends, which migrations 012 to 014 bring); and the last landed
// main at schema version 14 (4495acc: changes keyed by name, campaigns of
// one tenant, no job_skips nor job_archive, which migrations 015 to 018
// bring); and the last landed main at schema version 18 (08a434d: one
// person only, no approval_policy nor proposals, which migration 019
// brings).
var earlierMains = []string{"4c9e349", "bf757d6", "ca42209", "d85e75f", "a1dd7f0", "4495acc", "08a434d"}

// Issue 36's upgrade: an install made by the previous build, with orders
// jobs and a declared change's campaign in flight, one job paused and its
// worker still running, is migrated by this build. The new worker finishes
// every job exactly once (by job_audit and change_audit), and report, the
// campaign's report and undo answer for the jobs the old build registered.
func TestUpgradeTodaysFleet(t *testing.T) {
	t.Parallel()
	for _, rev := range earlierMains {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			upgradeFleetFrom(t, rev)
		})
	}
}

func upgradeFleetFrom(t *testing.T, rev string) {
	old := buildChunksAt(t, rev)
	s, globals, shop := installedBy(t, old)
	conn, name := s.Conn, s.Name
	for _, sql := range []string{
		"create table " + shop + ".payments(payment_id bigint primary key, status text not null, lock_version integer not null)",
		"insert into " + shop + ".payments select g, 'captured', 0 from generate_series(1, 150) g",
		"grant usage on schema " + shop + " to " + name + "_writer",
		"grant select, update on " + shop + ".payments to " + name + "_writer",
		"insert into orders (id, tenant, qty, state, revision) select g, 'acme', 1 + g % 3, 'pending', 0 from generate_series(1, 20) g",
	} {
		s.Exec(t, sql)
	}
	s.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": "hold", "table": "%s.payments", "key": "payment_id",
	  "version": "lock_version", "when": {"status": "captured"}, "set": {"status": "on_hold"}}`, shop))
	targets := make([]string, 150)
	for i := range targets {
		targets[i] = fmt.Sprintf(`{"payment_id": %d, "lock_version": 0}`, i+1)
	}
	s.Exec(t, "select campaign_create_change('holds', 'hold', 't', 5, $1)", "["+strings.Join(targets, ", ")+"]")
	for j, ids := range [][2]int{{1, 10}, {11, 20}} {
		var parts []string
		for id := ids[0]; id <= ids[1]; id++ {
			parts = append(parts, fmt.Sprintf(`{"id": %d, "revision": 0, "qty": %d}`, id, 1+id%3))
		}
		s.Exec(t, "select register($1)", fmt.Sprintf(`{"job_id": "o%d", "tenant": "acme", "chunk_size": 1, "allow_partial": true, "targets": [%s]}`,
			j+1, strings.Join(parts, ", ")))
	}
	s.Exec(t, "select run_chunk('o2')")
	s.Exec(t, "select pause_job('o2')")

	// The old fleet at work, slowly: two chunks a second per job.
	oldWorker := clitest.Start(t, clitest.Options{Name: "old worker", Binary: old, Timeout: workerLife},
		append(globals, "worker", "--id", "old", "--verbose", "--concurrency", "2", "--rate", "2")...)
	oldWorker.WaitLine(t, 0, 20*time.Second, "msg=ready")
	progress := func() int {
		return pgtest.MustInt(t, conn, "select coalesce(sum(next_index), 0)::int from jobs")
	}
	pgtest.WaitFor(t, 20*time.Second, "the old worker's first chunks", func() bool { return progress() >= 5 })

	if r := clitest.Run(t, append(globals, "migrate")...); r.Code != 0 {
		t.Fatalf("migrate with this build: %v", r)
	}
	if got := progress(); got >= 160 {
		t.Fatalf("every chunk ran before the upgrade (%d); the test upgrades nothing in flight", got)
	}
	// The change's functions under their new names; the old overloads are gone.
	if got := pgtest.MustString(t, conn, `select string_agg(p.oid::regprocedure::text, ' ' order by p.proname) from pg_proc as p
	    where p.pronamespace = current_schema()::regnamespace and p.proname like '%\_hold'`); got != "apply_hold(text,text,integer,jsonb) preview_hold(text,jsonb) restore_hold(text,text,integer,jsonb)" {
		t.Errorf("the change's functions after migrate: %s", got)
	}
	// The old worker goes on through the new functions, then a new one
	// replaces it; the paused job waits for its resume.
	at := progress()
	pgtest.WaitFor(t, 20*time.Second, "a chunk of the old worker after migrate", func() bool { return progress() > at })
	newWorker := clitest.Start(t, clitest.Options{Name: "new worker", Timeout: workerLife}, append(globals, "worker", "--id", "new", "--verbose", "--concurrency", "2")...)
	newWorker.WaitLine(t, 0, 20*time.Second, "msg=ready")
	explainOnFailure(t, conn, oldWorker, newWorker)
	stopWorkers(t, oldWorker)
	unfinished := func() int {
		return pgtest.MustInt(t, conn, "select count(*)::int from job_shapes where next_index < targets")
	}
	pgtest.WaitFor(t, 120*time.Second, "every job but the paused one done", func() bool { return unfinished() == 1 })
	if got := pgtest.MustInt(t, conn, "select next_index from jobs where job_id = 'o2'"); got != 1 {
		t.Fatalf("the paused job moved to %d", got)
	}
	s.Exec(t, "select resume_job('o2')")
	pgtest.WaitFor(t, 30*time.Second, "the resumed job done", func() bool { return unfinished() == 0 })
	stopWorkers(t, newWorker)

	// Exactly once, by the audits and the rows.
	if got := pgtest.MustString(t, conn, `select count(*) || ' ' || count(distinct id) from job_audit`); got != "20 20" {
		t.Errorf("job_audit after the upgrade (rows, distinct ids): %s", got)
	}
	if got := pgtest.MustString(t, conn, "select string_agg(state || ' ' || revision || ' ' || n, ', ') from (select state, revision, count(*) as n from orders group by 1, 2 order by 1, 2) as x"); got != "cancelled 1 20" {
		t.Errorf("orders after the upgrade: %s", got)
	}
	if got := pgtest.MustString(t, conn, `select count(*) || ' ' || count(distinct key) || ' ' || count(*) filter (where version_before = 0 and version_after = 1) from change_audit`); got != "150 150 150" {
		t.Errorf("change_audit after the upgrade (rows, keys, 0 to 1): %s", got)
	}
	if got := pgtest.MustString(t, conn, "select string_agg(status || ' ' || lock_version || ' ' || n, ', ') from (select status, lock_version, count(*) as n from "+
		shop+".payments group by 1, 2 order by 1, 2) as x"); got != "on_hold 1 150" {
		t.Errorf("payments after the upgrade: %s", got)
	}

	// The new build's report, campaign report and undo of jobs the old one registered.
	if out := clitest.Run(t, append(globals, "report", "o1")...); out.Code != 0 || !strings.Contains(out.Stdout, "job o1: 10 approved, 10 committed, 0 remaining: 10 matching, 0 drifted, 0 missing") {
		t.Errorf("report o1: %v", out)
	}
	s.Exec(t, "update "+shop+".payments set status = 'refunded' where payment_id = 7")
	if out := clitest.Run(t, append(globals, "campaign", "report", "holds")...); out.Code != 0 || !strings.Contains(out.Stdout, "149 matching, 1 drifted 7, 0 missing none") {
		t.Errorf("campaign report holds: %v", out)
	}
	if out := clitest.Run(t, append(globals, "undo", "holds-000001")...); out.Code != 0 || !strings.Contains(out.Stdout, "drifted 7") {
		t.Errorf("undo holds-000001: %v", out)
	}
	if out := clitest.Run(t, append(globals, "drain", "holds-000001-undo")...); out.Code != 0 {
		t.Errorf("drain the undo: %v", out)
	}
	// The first job holds 60 targets (12 chunks of 5) when the old build
	// made jobs of at most 64, and all 150 since schema version 11 (jobs of
	// up to 100 chunks): its targets, but the drifted one, are restored.
	first := pgtest.MustInt(t, conn, "select targets from job_shapes where job_id = 'holds-000001'")
	want := 60
	if rev == "a1dd7f0" || rev == "4495acc" || rev == "08a434d" {
		want = 150
	}
	if first != want {
		t.Errorf("holds-000001 holds %d targets, want %d", first, want)
	}
	if got := pgtest.MustInt(t, conn, "select count(*)::int from "+shop+".payments where status = 'captured' and lock_version = 2"); got != first-1 {
		t.Errorf("%d rows restored by the undo, want the first job's %d but the drifted one", got, first)
	}
	for _, w := range []*clitest.Proc{oldWorker, newWorker} {
		for _, line := range w.Lines() {
			if strings.Contains(line, "level=ERROR") {
				t.Errorf("%s logged: %s", w.Name, line)
			}
		}
	}
}
