package cli

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Issue 37, item 1 through the binary: a job of 10,000 targets registered
// from a query at chunk size 1,000, drained by two chunks worker
// processes (--chunk-time 24h: the approved size throughout), one of them
// SIGKILLed inside a chunk of 1,000 rows: every row changed exactly once,
// ten chunks recorded, chunks verify sound; a
// rewrite of its targets past the written-once trigger is unsound for
// verify (exit 3, naming it), and so is a campaign holding such a job.
func TestChangeBigJobVerified(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	const n = 10000
	victim := l.Name + "-victim"
	shop := l.UserSchema(t, fmt.Sprintf(`create table %%[1]s.accounts(id bigint primary key, status text not null, balance integer not null);
	  insert into %%[1]s.accounts select g, 'open', g from generate_series(1, %d) g;
	  create table %%[1]s.updates(id bigint);
	  create function %%[1]s.count_update() returns trigger language plpgsql as $t$
	  begin insert into %%[1]s.updates values (new.id); return new; end $t$;
	  create trigger counted after update on %%[1]s.accounts for each row execute function %%[1]s.count_update();
	  create function %%[1]s.slow() returns trigger language plpgsql as $t$
	  begin perform pg_sleep(case when current_setting('application_name') = '%s' then 3 else 0.02 end); return null; end $t$;
	  create trigger slow after update on %%[1]s.accounts for each statement execute function %%[1]s.slow();`, n, victim))
	l.Exec(t, fmt.Sprintf(`do $g$ begin execute format('grant insert on %s.updates to %%I', (select role from change_writer)); end $g$`, shop))
	def := writeFile(t, "freeze.json", fmt.Sprintf(`{"name": "freeze", "table": "%s.accounts", "key": "id", "expect": ["balance"],
	  "when": {"status": "open"}, "set": {"status": "frozen"}}`, shop))
	wantOK(t, l.Chunks(t, "change", "define", def))
	query := fmt.Sprintf("select id, balance from %s.accounts order by id desc", shop)
	wantFailure(t, l.Chunks(t, "register", "--change", "freeze", "--tenant", "t", "--chunk-size", "1001", "--allow-partial",
		"--from-query", query, "big"), 2, "chunk_size: must be between 1 and 1000, got 1001")
	if out := wantOK(t, l.Chunks(t, "register", "--change", "freeze", "--tenant", "t", "--chunk-size", "1000", "--allow-partial",
		"--from-query", query, "big")); out != "registered job big of change freeze: 10000 targets of t, 1000 per chunk\n" {
		t.Fatalf("register --from-query: %q", out)
	}

	start := func(app, id string) *clitest.Proc {
		return clitest.Start(t, clitest.Options{Name: id, Timeout: 3 * time.Minute}, "--dsn", l.ChunksDSN+" application_name="+app,
			"--schema", l.Name, "worker", "--id", id, "--verbose", "--concurrency", "1", "--poll", "200ms", "--chunk-time", "24h")
	}
	killed := start(victim, "victim")
	pgtest.WaitFor(t, 20*time.Second, "the victim inside a chunk", func() bool {
		return pgtest.MustInt(t, l.Conn, `select count(*) from pg_stat_activity
		    where application_name = $1 and query like '%run_%chunk%' and wait_event = 'PgSleep'`, victim) > 0
	})
	other := start(l.Name, "w1")
	other.WaitLine(t, 0, 20*time.Second, "msg=ready")
	killed.Signal(t, syscall.SIGKILL)
	if r := killed.WaitWithin(t, 10*time.Second); r.Signal != syscall.SIGKILL {
		t.Fatalf("want the victim killed by SIGKILL, got %v", r)
	}
	nextIndex := func() int { return pgtest.MustInt(t, l.Conn, "select next_index from jobs where job_id = 'big'") }
	if nextIndex() == n {
		t.Fatal("the job finished before the kill: the test proves nothing")
	}
	pgtest.WaitFor(t, 90*time.Second, "the job drained", func() bool { return nextIndex() == n })
	other.Signal(t, syscall.SIGTERM)
	if r := other.WaitWithin(t, 20*time.Second); r.Code != 0 {
		t.Fatalf("want w1 to exit 0 after SIGTERM, got %v", r)
	}
	// Exactly once, in ten chunks of 1,000.
	if got, want := pgtest.MustString(t, l.Conn, fmt.Sprintf(`select jsonb_build_array(
	    (select count(*) from change_audit where job_id = 'big'), (select count(distinct key) from change_audit where job_id = 'big'),
	    (select count(*) from %[1]s.updates), (select count(distinct id) from %[1]s.updates),
	    (select count(*) from %[1]s.accounts where status = 'frozen'),
	    (select jsonb_agg(distinct size) from change_chunks where job_id = 'big'), (select count(*) from change_chunks where job_id = 'big'))::text`, shop)),
		fmt.Sprintf(`[%[1]d, %[1]d, %[1]d, %[1]d, %[1]d, [1000], 10]`, n); got != want {
		t.Fatalf("audit rows (keys), row updates (rows), rows changed, chunk sizes, chunks: %s, want %s", got, want)
	}

	if out := wantOK(t, l.Chunks(t, "verify", "big")); out != "job big: sound: 10000 of 10000 targets committed in 10 chunks, each audited once, its approval unchanged\n" {
		t.Fatalf("verify: %q", out)
	}
	chunks := 10
	wantJSON(t, l.Chunks(t, "--json", "verify", "big"), driver.Verification{JobID: "big", Sound: true, Targets: n, ChunkSize: 1000, NextIndex: n, Chunks: &chunks})

	// Rewritten past the trigger: unsound, exit 3, report's words.
	l.Exec(t, "alter table change_targets disable trigger written_once")
	l.Exec(t, `update change_targets set target = jsonb_set(target, '{balance}', '1') where job_id = 'big' and ordinal = 4000`)
	l.Exec(t, "alter table change_targets enable trigger written_once")
	wantFailure(t, l.Chunks(t, "verify", "big"), 3, "job big: the stored job is no longer the registered approval: its targets were changed after register")

	// A campaign of the change at chunk size 500: jobs of 100 chunks and at
	// most 10,000 targets; verified sound, then unsound once a job's audit
	// lost a row.
	l.Exec(t, fmt.Sprintf("update %s.accounts set status = 'open'", shop))
	wantOK(t, l.Chunks(t, "campaign", "create", "--change", "freeze", "--tenant", "t", "--chunk-size", "500", "--allow-partial", "--from-query",
		fmt.Sprintf("select id, balance from %s.accounts where id <= 2500", shop), "thaw"))
	wantOK(t, l.Chunks(t, "drain", "thaw-000001"))
	if out := wantOK(t, l.Chunks(t, "verify", "--campaign", "thaw")); out != "campaign thaw: 1 jobs, 2500 of 2500 targets committed; 0 unsound\n" {
		t.Fatalf("verify --campaign: %q", out)
	}
	l.Exec(t, "delete from change_audit where job_id = 'thaw-000001' and ordinal = 7")
	r := l.Chunks(t, "verify", "--campaign", "thaw")
	if r.Code != 3 || r.Stdout != "campaign thaw: 1 jobs, 2500 of 2500 targets committed; 1 unsound\n"+
		"  job thaw-000001: the stored job is not sound: its audit (change_audit) is not exactly targets[0:2500]\n" {
		t.Fatalf("verify --campaign of an unsound job: %v", r)
	}
	wantErrorLine(t, r, "verify: campaign thaw: 1 of 1 jobs are not sound")
	wantFailure(t, l.Chunks(t, "verify", "nosuch"), 3, "job nosuch: not found")
	wantFailure(t, l.Chunks(t, "verify", "--campaign", "thaw", "big"), 2)
}
