package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// sessionsSQL is auth.sessions of issue 39: an identity column and a
// generated one, an archive made like it, and a child under ON DELETE
// RESTRICT; the writer may delete and put rows back, and fill the archive.
const sessionsSQL = `
create table %[1]s.sessions(session_id bigint primary key, account_id integer not null, revoked boolean not null,
  expires_at timestamptz not null, token text not null, seq bigint generated always as identity,
  token_len integer generated always as (length(token)) stored);
create table %[1]s.sessions_archive (like %[1]s.sessions);
create table %[1]s.devices(device_id bigint primary key, session_id bigint references %[1]s.sessions on delete restrict);
insert into %[1]s.sessions (session_id, account_id, revoked, expires_at, token)
select g, 7, g <> 8, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 hour', 'tok-' || g from generate_series(1, 8) g;
insert into %[1]s.devices values (1, 3);`

// purgeSessions is the purge_sessions on schema shop.
func purgeSessions(shop string) string {
	return fmt.Sprintf(`{"name": "purge_sessions", "table": "%[1]s.sessions", "key": "session_id", "tenant": "account_id",
	  "expect": ["expires_at"], "when": {"revoked": true}, "delete": true, "archive": "%[1]s.sessions_archive"}`, shop)
}

// sessionTargets are targets of purge_sessions for sessions ids.
func sessionTargets(ids ...int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf(`{"session_id": %d, "expires_at": "2026-01-01T%02d:00:00+00:00"}`, id, id)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// TestChangeDelete (issue 39, items 1 to 5 but cascade): a change that
// deletes an approved list of rows, each pinned at its approved expect
// values, with each deleted row's full image (identity and generated
// columns too) in its audit and in the archive, in the same statement; a
// row another table references is a conflict naming it; report calls a
// deleted row matching while no row has its key and drifted when one has
// it again; the undo puts every other row back byte for byte, identity and
// all, and takes it out of the archive. Refused at define: a delete that
// sets, an archive of other columns, a table under ON DELETE CASCADE.
func TestChangeDelete(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, sessionsSQL)
	w := writerOf(t, s)
	s.Exec(t, fmt.Sprintf("grant select, delete, insert on %[1]s.sessions to %[2]s; grant select, insert, delete on %[1]s.sessions_archive to %[2]s", shop, w))
	q := func(sql string, args ...any) string { return pgtest.MustString(t, s.Conn, sql, args...) }
	def := purgeSessions(shop)
	for _, c := range []struct{ def, want string }{
		{strings.Replace(def, `"delete": true`, `"delete": true, "set": {"token": "x"}`, 1),
			"delete: a change that deletes writes no column (no set, set_from_target or set_now)"},
		{strings.Replace(def, `"delete": true`, `"delete": false`, 1), "delete: must be true (leave it out for a change that updates), got false"},
		{strings.Replace(def, `"delete": true, `, `"set": {"token": "x"}, `, 1), `archive: only a change that deletes has an archive ("delete": true)`},
		{strings.Replace(def, "sessions_archive", "devices", 1), "archive: " + shop + ".devices has no column account_id (integer)"},
	} {
		refuse(t, s, "22023", c.want, "select define_change($1)", c.def)
	}
	s.Exec(t, fmt.Sprintf("create table %[1]s.notes(note_id bigint primary key, session_id bigint references %[1]s.sessions on delete cascade)", shop))
	refuse(t, s, "22023", "table: "+shop+".sessions is referenced by "+shop+".notes (foreign key notes_session_id_fkey, ON DELETE CASCADE): deleting a row would delete its rows there with no audit; a change that deletes refuses such a table (or name it in cascade: [\""+shop+".notes\"], to audit them too)",
		"select define_change($1)", def)
	s.Exec(t, fmt.Sprintf("drop table %s.notes", shop))

	if !pgtest.MustBool(t, s.Conn, "select define_change($1)", def) {
		t.Fatal("define_change: false for a new change")
	}
	// define says which index a delete lacks (a notice; nothing refused).
	sameJSON(t, "notice", q("select to_jsonb(change_delete_notice($1))::text", def),
		`"chunks: no index leads with `+shop+`.devices (session_id), the foreign key devices_session_id_fkey; `+shop+
			`.sessions_archive (session_id), the archive: each deleted row (or its undo) scans that table (create index on ... (those columns))"`)
	s.Exec(t, fmt.Sprintf("create index on %[1]s.devices (session_id); create index on %[1]s.sessions_archive (session_id)", shop))
	sameJSON(t, "no notice", q("select coalesce(to_jsonb(change_delete_notice($1)), 'null')::text", def), `null`)
	images := q(fmt.Sprintf("select jsonb_object_agg(session_id, to_jsonb(x))::text from %s.sessions as x", shop))
	q("select register_change('purge_sessions', $1)::text", changePlan("p", "7", sessionTargets(1, 2, 3, 4, 5, 6), 2))
	sameJSON(t, "chunk 1", q("select run_chunk('p')::text"), `{"processed": [1, 2], "next_index": 2, "done": false}`)
	// Session 3 is still referenced by a device (ON DELETE RESTRICT).
	// (PostgreSQL's own words: "is still referenced" under NO ACTION and, before
	// 18, RESTRICT; "is referenced" under RESTRICT since 18, SQLSTATE 23001)
	_, err := pgtest.TryString(s.Conn, "select run_chunk('p')::text")
	if pgCode(err) != "CH409" || !strings.Contains(err.Error(), `Key (session_id)=(3) is`) || !strings.Contains(err.Error(), `referenced from table "devices". (a change that deletes leaves a row that another table references)`) {
		t.Fatalf("a referenced session: %v", err)
	}
	s.Exec(t, fmt.Sprintf("delete from %s.devices", shop))
	sameJSON(t, "chunk 2", q("select run_chunk('p')::text"), `{"processed": [3, 4], "next_index": 4, "done": false}`)
	sameJSON(t, "chunk 3", q("select run_chunk('p')::text"), `{"processed": [5, 6], "next_index": 6, "done": true}`)
	sameJSON(t, "left", q(fmt.Sprintf("select jsonb_agg(session_id order by session_id)::text from %s.sessions", shop)), `[7, 8]`)
	// The audit and the archive hold each row's full image, as it was.
	sameJSON(t, "audit", q(`select jsonb_object_agg(key, before)::text from change_audit where job_id = 'p'`),
		q("select (select jsonb_object_agg(e.key, e.value) from jsonb_each($1::jsonb) as e where e.key::int <= 6)::text", images))
	sameJSON(t, "archive", q(fmt.Sprintf("select jsonb_object_agg(session_id, to_jsonb(x))::text from %s.sessions_archive as x", shop)),
		q("select (select jsonb_object_agg(e.key, e.value) from jsonb_each($1::jsonb) as e where e.key::int <= 6)::text", images))

	sameJSON(t, "report", q("select report('p')::text"),
		`{"approved": [1, 2, 3, 4, 5, 6], "committed": [1, 2, 3, 4, 5, 6], "remaining": [], "matching": [1, 2, 3, 4, 5, 6], "drifted": [], "missing": []}`)
	s.Exec(t, fmt.Sprintf("insert into %s.sessions (session_id, account_id, revoked, expires_at, token) values (2, 7, false, now(), 'back')", shop))
	sameJSON(t, "report after a row came back", q("select jsonb_build_array(r -> 'matching', r -> 'drifted', r -> 'missing')::text from report('p') as r"),
		`[[1, 3, 4, 5, 6], [2], []]`)

	// The undo puts back the other five, byte for byte, and empties the archive of them.
	sameJSON(t, "undo", q("select jsonb_build_array(u -> 'targets', u -> 'drifted')::text from register_undo('p') as u"), `[[1, 3, 4, 5, 6], [2]]`)
	for range 3 {
		q("select run_chunk('p-undo')::text")
	}
	sameJSON(t, "put back", q(fmt.Sprintf("select jsonb_object_agg(session_id, to_jsonb(x))::text from %s.sessions as x where session_id <> 2", shop)),
		q("select (select jsonb_object_agg(e.key, e.value) from jsonb_each($1::jsonb) as e where e.key::int <> 2)::text", images))
	sameJSON(t, "archive after the undo", q(fmt.Sprintf("select jsonb_agg(session_id order by session_id)::text from %s.sessions_archive", shop)), `[2]`)
	sameJSON(t, "undo's report", q("select jsonb_build_array(r -> 'matching', r -> 'drifted')::text from report('p-undo') as r"), `[[1, 3, 4, 5, 6], []]`)
	// Any column of a row put back changed since (not only a pinned one) is drift.
	s.Exec(t, fmt.Sprintf("update %s.sessions set token = 'other' where session_id = 4", shop))
	sameJSON(t, "undo's report after an edit", q("select jsonb_build_array(r -> 'matching', r -> 'drifted')::text from report('p-undo') as r"), `[[1, 3, 5, 6], [4]]`)
	sameJSON(t, "verify", q("select (verify_job('p') -> 'sound')::text"), `true`)
}

// TestChangeDeleteCascade (issue 39, item 3): a table whose child is ON
// DELETE CASCADE is refused unless the definition names the child in
// cascade; then each deleted parent's audit image holds its children's
// rows too ("?cascade"), and the undo puts the parent back first, then its
// children, every one byte for byte.
func TestChangeDeleteCascade(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, sessionsSQL+fmt.Sprintf(`
create table %[1]s.tokens(token_id bigint primary key, session_id bigint not null references %[1]s.sessions on delete cascade,
  value text not null, n bigint generated always as identity);
insert into %[1]s.tokens (token_id, session_id, value) select g, 1 + mod(g, 3), 'v' || g from generate_series(1, 6) g;
delete from %[1]s.devices;`, "%[1]s"))
	w := writerOf(t, s)
	s.Exec(t, fmt.Sprintf("grant select, delete, insert on %[1]s.sessions, %[1]s.tokens to %[2]s; grant select, insert, delete on %[1]s.sessions_archive to %[2]s", shop, w))
	q := func(sql string, args ...any) string { return pgtest.MustString(t, s.Conn, sql, args...) }
	def := purgeSessions(shop)
	refuse(t, s, "22023", "table: "+shop+".sessions is referenced by "+shop+".tokens (foreign key tokens_session_id_fkey, ON DELETE CASCADE): deleting a row would delete its rows there with no audit; a change that deletes refuses such a table (or name it in cascade: [\""+shop+".tokens\"], to audit them too)",
		"select define_change($1)", def)
	refuse(t, s, "22023", "cascade: "+shop+".devices has no foreign key to "+shop+".sessions ON DELETE CASCADE",
		"select define_change($1)", strings.Replace(def, `"delete": true`, fmt.Sprintf(`"delete": true, "cascade": [%q]`, shop+".devices"), 1))
	def = strings.Replace(def, `"delete": true`, fmt.Sprintf(`"delete": true, "cascade": [%q]`, shop+".tokens"), 1)
	if !pgtest.MustBool(t, s.Conn, "select define_change($1)", def) {
		t.Fatal("define_change: false")
	}
	tokens := q(fmt.Sprintf("select jsonb_agg(to_jsonb(x) order by token_id)::text from %s.tokens as x", shop))
	q("select register_change('purge_sessions', $1)::text", changePlan("c", "7", sessionTargets(1, 2, 3), 3))
	q("select run_chunk('c')::text")
	sameJSON(t, "tokens left", q(fmt.Sprintf("select count(*)::text from %s.tokens", shop)), `0`)
	sameJSON(t, "children in the audit", q(`select jsonb_agg(jsonb_array_length(before -> '?cascade' -> $1) order by ordinal)::text from change_audit where job_id = 'c'`, shop+".tokens"),
		`[2, 2, 2]`)
	q("select register_undo('c')::text")
	q("select run_chunk('c-undo')::text")
	sameJSON(t, "tokens back", q(fmt.Sprintf("select jsonb_agg(to_jsonb(x) order by token_id)::text from %s.tokens as x", shop)), tokens)
	sameJSON(t, "sessions back", q(fmt.Sprintf("select jsonb_agg(session_id order by session_id)::text from %s.sessions", shop)), `[1, 2, 3, 4, 5, 6, 7, 8]`)
}
