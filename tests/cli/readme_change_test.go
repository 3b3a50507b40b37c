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
