package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// docs/your-own-tables.md, from the CLI: the definition and the plan as
// the guide shows them, and its command lines run by sh as written (on a
// shop.payments of this test's own schema), each printing what its comment
// says (… stands for the rest; "exit N, on stderr:" for a failure).
func TestChangeREADMECLI(t *testing.T) {
	t.Parallel()
	blocks := pgtest.WantDocBlocks(t, 3, "hold_payment.json, holds-1.json, session", "<!-- tests TestChangeREADMECLI", "your-own-tables.md")
	l := newLab(t)
	shop := l.UserSchema(t, `create table %[1]s.payments(payment_id bigint primary key, merchant_id integer not null,
	  status text not null, amount_cents integer not null, hold_reason text, lock_version integer not null);
	  insert into %[1]s.payments values (5, 42, 'captured', 300, null, 0), (7, 42, 'captured', 1200, null, 3)`)
	dir := t.TempDir()
	for i, name := range []string{"hold_payment.json", "holds-1.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(blocks[i], "shop.payments", shop+".payments")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := shellEnv("CHUNKS_DSN="+l.ChunksDSN, "CHUNKS_SCHEMA="+l.Name)
	ran := runGuideLines(t, blocks[2], env, dir, func(s string) string { return strings.ReplaceAll(s, "shop.payments", shop+".payments") })
	if ran != 10 {
		t.Errorf("ran %d guide command lines, want 10", ran)
	}
}

// docs/your-own-tables.md "Deleting and archiving", from the CLI: the
// definition and the plan as the guide shows them, its lines run by sh on
// auth.sessions and archive.sessions (schemas of their own, this test's
// only): three sessions deleted into the archive, one re-inserted by hand
// (drifted), the undo puts the other two back.
func TestDeleteGuide(t *testing.T) {
	t.Parallel()
	blocks := pgtest.WantDocBlocks(t, 3, "purge_sessions.json, purge-1.json, session", "<!-- tests TestDeleteGuide", "your-own-tables.md")
	l := newLab(t)
	for _, sql := range []string{"drop schema if exists auth, archive cascade", "create schema auth", "create schema archive",
		`create table auth.sessions(session_id bigint primary key, account_id integer not null,
		   revoked boolean not null, expires_at timestamptz not null, seq bigint generated always as identity)`,
		"create table archive.sessions (like auth.sessions)",
		`insert into auth.sessions (session_id, account_id, revoked, expires_at)
		 select g, 7, true, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 hour' from generate_series(1, 4) g`,
		`do $g$ begin execute format('grant usage on schema auth, archive to %1$I; grant select, insert, delete on auth.sessions, archive.sessions to %1$I',
		   (select role from change_writer)); end $g$`} {
		l.Exec(t, sql)
	}
	t.Cleanup(func() { l.Exec(t, "drop schema auth, archive cascade") })
	dir := t.TempDir()
	for i, name := range []string{"purge_sessions.json", "purge-1.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(blocks[i]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := shellEnv("CHUNKS_DSN="+l.ChunksDSN, "CHUNKS_SCHEMA="+l.Name)
	if ran := runGuideLines(t, blocks[2], env, dir, func(s string) string { return s }); ran != 10 {
		t.Errorf("ran %d guide command lines, want 10", ran)
	}
}
