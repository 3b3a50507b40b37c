package pgtap

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

var ctx = context.Background()

// installExtension makes sure extension ext is installed in the test
// database and returns the schema that holds it, quoted for SQL where needed.
// When it is not installed yet, it goes into schema (created if missing),
// never into public or a chunks schema; an extension that some other test
// already installed elsewhere is used where it is.
//
// Several test binaries may share one database ($CHUNKS_TEST_DSN), and
// concurrent CREATE SCHEMA / CREATE EXTENSION IF NOT EXISTS collide in the
// catalog instead of being no-ops, so the work is serialized by a
// transaction-level advisory lock. When the server lacks the extension's
// files the test is skipped, or fails under CI ([pgtest.RequireTool]),
// naming the Debian package (debPackage, a format for the server's major
// version).
func installExtension(t *testing.T, conn *pgx.Conn, ext, schema, debPackage string) string {
	t.Helper()
	var major int
	var available bool
	err := conn.QueryRow(ctx, `select current_setting('server_version_num')::int / 10000,
	                                  exists (select from pg_available_extensions where name = $1)`, ext).
		Scan(&major, &available)
	if err != nil {
		t.Fatalf("look for extension %s: %v", ext, err)
	}
	if !available {
		pgtest.RequireTool(t, fmt.Errorf("the database server has no %s extension", ext), ext, fmt.Sprintf(debPackage, major))
	}

	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatalf("install %s: %v", ext, err)
	}
	defer func() {
		if err := tx.Rollback(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			t.Errorf("install %s: rollback: %v", ext, err)
		}
	}()
	if _, err := tx.Exec(ctx, "select pg_advisory_xact_lock(hashtextextended('chunks tests: create extension', 0))"); err != nil {
		t.Fatalf("install %s: lock: %v", ext, err)
	}
	var have string
	const where = `select e.extnamespace::regnamespace::text from pg_extension as e where e.extname = $1`
	err = tx.QueryRow(ctx, where, ext).Scan(&have)
	if errors.Is(err, pgx.ErrNoRows) {
		ident := pgx.Identifier{schema}.Sanitize()
		if _, err := tx.Exec(ctx, "create schema if not exists "+ident); err != nil {
			t.Fatalf("install %s: %v", ext, err)
		}
		if _, err := tx.Exec(ctx, "create extension if not exists "+pgx.Identifier{ext}.Sanitize()+" schema "+ident); err != nil {
			t.Fatalf("install %s: %v", ext, err)
		}
		err = tx.QueryRow(ctx, where, ext).Scan(&have)
	}
	if err != nil {
		t.Fatalf("install %s: %v", ext, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("install %s: %v", ext, err)
	}
	return have
}
