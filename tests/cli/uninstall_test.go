package cli

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/pgtest"
)

// docs/installing-and-upgrading.md's uninstall works as typed: after its
// block (an operator and a viewer granted, as docs/roles.md has them) the
// schema is gone and each role holds nothing of it, so DROP ROLE works.
func TestUninstall(t *testing.T) {
	t.Parallel()
	blocks := pgtest.WantDocBlocks(t, 1, "the block", "<!-- tests TestUninstall", "installing-and-upgrading.md")
	l := newLab(t)
	alice, grafana := pgtest.NewRole(t, pgtest.DSN(), "alice"), pgtest.NewRole(t, pgtest.DSN(), "grafana")
	wantOK(t, l.Chunks(t, "grant", "--operator", alice.Name, "--viewer", grafana.Name))
	rename := strings.NewReplacer("--viewer alice", "--viewer "+alice.Name, "--viewer grafana", "--viewer "+grafana.Name,
		"schema lab ", "schema "+l.Name+" ", "--schema lab ", "--schema "+l.Name+" ")
	env := shellEnv("CHUNKS_DSN=" + l.ChunksDSN)
	if ran := runGuideLines(t, rename.Replace(blocks[0]), env, t.TempDir(), func(s string) string { return s }); ran != 2 {
		t.Fatalf("ran %d guide command lines, want 2", ran)
	}
	var left bool
	if err := l.Conn.QueryRow(t.Context(), "select exists (select from pg_namespace where nspname = $1)", l.Name).Scan(&left); err != nil || left {
		t.Errorf("schema %s still there (%v)", l.Name, err)
	}
	tx, err := l.Conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tx.Rollback(t.Context()); err != nil {
			t.Errorf("rollback: %v", err)
		}
	}()
	for _, r := range []pgtest.Role{alice, grafana} {
		if _, err := tx.Exec(t.Context(), "drop role "+pgx.Identifier{r.Name}.Sanitize()); err != nil {
			t.Errorf("drop role %s after the uninstall: %v", r.Name, err)
		}
	}
}
