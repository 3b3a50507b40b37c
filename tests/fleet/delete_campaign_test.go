package fleet

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Issue 39's run: a 100,000-row sessions table with an archive, a child
// under ON DELETE RESTRICT (its parent is no target) and one under
// CASCADE (named in cascade); a campaign of the 20,000 revoked sessions,
// from a query, drained by two worker processes, one SIGKILLed inside a
// chunk: exactly those rows are gone, each once, with its full image in
// the audit and in the archive, and their tokens with them. Three are
// re-inserted by hand and show as drifted; one campaign undo puts the
// other 19,997 back byte for byte (row_to_json), identity and generated
// columns included, with their tokens, and out of the archive.
func TestDeleteCampaignWithAKilledWorker(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	shop := l.UserSchema(t, `
create table %[1]s.sessions(session_id bigint primary key, account_id integer not null, revoked boolean not null,
  expires_at timestamptz not null, token text not null, seq bigint generated always as identity,
  token_len integer generated always as (length(token)) stored);
create table %[1]s.sessions_archive (like %[1]s.sessions);
create table %[1]s.devices(device_id bigint primary key, session_id bigint references %[1]s.sessions on delete restrict);
create table %[1]s.tokens(token_id bigint primary key, session_id bigint not null references %[1]s.sessions on delete cascade, value text not null);
insert into %[1]s.sessions (session_id, account_id, revoked, expires_at, token)
  select g, 7, mod(g, 5) = 0, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second', 'tok-' || g from generate_series(1, 100000) g;
insert into %[1]s.tokens select g, g * 5, 'v' || g from generate_series(1, 1000) g;
insert into %[1]s.devices values (1, 1);
create index on %[1]s.tokens (session_id);
create index on %[1]s.devices (session_id);
create index on %[1]s.sessions_archive (session_id);
create table %[1]s.before as select * from %[1]s.sessions;
create table %[1]s.tokens_before as select * from %[1]s.tokens;
create function %[1]s.slow_for() returns trigger language plpgsql as $t$
begin
  perform pg_sleep(case when current_setting('application_name') = tg_argv[0] then 0.3 else 0 end);
  return null;
end $t$;
analyze %[1]s.sessions;`)
	l.Exec(t, fmt.Sprintf(`do $g$ begin execute format('grant delete on %[1]s.sessions, %[1]s.sessions_archive, %[1]s.tokens to %%I', (select role from change_writer)); end $g$`, shop))
	l.Exec(t, fmt.Sprintf("grant usage on schema %[1]s to %[2]s; grant select on %[1]s.sessions to %[2]s", shop, pgx.Identifier{l.operator.Name}.Sanitize()))
	l.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": "purge", "table": "%[1]s.sessions", "key": "session_id", "tenant": "account_id",
	  "expect": ["expires_at"], "when": {"revoked": true}, "delete": true, "archive": "%[1]s.sessions_archive", "cascade": ["%[1]s.tokens"]}`, shop))
	created := campaignJSON[driver.CampaignCreated](t, l, "create", "--change", "purge", "--tenant", "7", "--chunk-size", "100", "--allow-partial",
		"--from-query", fmt.Sprintf("select session_id, expires_at from %s.sessions where revoked", shop), "purge")
	if !created.Created || created.Targets != 20000 || created.Jobs != 2 {
		t.Fatalf("created %+v", created)
	}

	victimApp := l.Name + "-victim"
	l.Exec(t, fmt.Sprintf("create trigger slow after delete on %[1]s.sessions for each statement execute function %[1]s.slow_for('%[2]s')", shop, victimApp))
	workers := []*clitest.Proc{
		l.startWorker(t, "w1", "--poll", "200ms"),
		l.startWorkerAs(t, victimApp, "victim", "--poll", "200ms"),
	}
	for _, w := range workers {
		w.WaitLine(t, 0, 20*time.Second, "msg=ready")
	}
	pgtest.WaitFor(t, 60*time.Second, "the victim inside a chunk", func() bool { return l.chunkInFlightAs(t, victimApp) })
	workers[1].Signal(t, syscall.SIGKILL)
	if r := workers[1].WaitWithin(t, 10*time.Second); r.Signal != syscall.SIGKILL {
		t.Fatalf("want the victim killed by SIGKILL, got %v", r)
	}
	if l.allDone(t) {
		t.Fatal("the campaign finished before the kill: the test proves nothing")
	}
	pgtest.WaitFor(t, 120*time.Second, "the campaign drained", func() bool {
		return l.allDone(t) && pgtest.MustInt(t, l.Conn, "select count(*) from job_queue") == 0
	})

	q := func(sql string) string { return pgtest.MustString(t, l.Conn, fmt.Sprintf(sql, shop)) }
	// Exactly the revoked sessions are gone, each audited once with its full
	// image (its tokens in it), and archived as it was.
	if got := q(`select format('%%s %%s %%s %%s %%s', (select count(*) from %[1]s.sessions), (select count(*) from %[1]s.sessions where revoked),
	    (select count(*) || '/' || count(distinct key) from change_audit), (select count(*) from %[1]s.tokens),
	    (select count(*) from %[1]s.before as b join %[1]s.sessions_archive as a using (session_id) where row_to_json(a)::text = row_to_json(b)::text))`); got != "80000 0 20000/20000 0 20000" {
		t.Fatalf("sessions left, revoked left, audit rows/keys, tokens left, archived as they were: %s", got)
	}
	if got := q(`select count(*) from change_audit as a join %[1]s.before as b on b.session_id = a.key::bigint
	    where (a.before - '?cascade')::text = to_jsonb(b)::text`); got != "20000" {
		t.Fatalf("audit images equal to the rows: %s", got)
	}

	// Three re-inserted by hand: drifted; the campaign's undo leaves them.
	l.Exec(t, fmt.Sprintf("insert into %s.sessions (session_id, account_id, revoked, expires_at, token) values (5, 7, false, now(), 'x'), (10, 7, false, now(), 'x'), (15, 7, false, now(), 'x')", shop))
	rep := campaignJSON[driver.CampaignDrift](t, l, "report", "purge")
	if rep.Matching != 19997 || rep.DriftedCount != 3 || rep.MissingCount != 0 {
		t.Fatalf("campaign report after 3 re-inserts: %+v", rep)
	}
	undo := campaignJSON[driver.CampaignUndo](t, l, "undo", "purge")
	if !undo.Created || undo.Targets != 19997 || len(undo.Drifted) != 3 {
		t.Fatalf("campaign undo: %+v", undo)
	}
	w := l.startWorker(t, "w2", "--poll", "200ms")
	pgtest.WaitFor(t, 120*time.Second, "the undo drained", func() bool {
		return l.allDone(t) && pgtest.MustInt(t, l.Conn, "select count(*) from job_queue") == 0
	})
	stopWorkers(t, workers[0], w)
	if got := q(`select format('%%s %%s %%s %%s', (select count(*) from %[1]s.before as b join %[1]s.sessions as s using (session_id)
	      where b.revoked and row_to_json(s)::text = row_to_json(b)::text),
	    (select count(*) from %[1]s.tokens_before as b join %[1]s.tokens as s using (token_id) where row_to_json(s)::text = row_to_json(b)::text),
	    (select count(*) from %[1]s.tokens), (select string_agg(session_id::text, ' ' order by session_id) from %[1]s.sessions_archive))`); got != "19997 997 997 5 10 15" {
		t.Fatalf("sessions put back as they were, tokens back as they were, tokens, archive left: %s", got)
	}
	if rep := campaignJSON[driver.CampaignDrift](t, l, "report", "purge-undo"); rep.Matching != 19997 {
		t.Fatalf("the undo's report: %+v", rep)
	}
}
