package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/pgtest"
)

// docs/your-own-tables.md, from the CLI: the definition and the plan as
// the guide shows them, and its command lines run by sh as written (on a
// shop.payments of this test's own schema), each printing what its comment
// says (… stands for the rest; "exit N, on stderr:" for a failure).
func TestChangeREADMECLI(t *testing.T) {
	t.Parallel()
	blocks := pgtest.DocBlocks(t, "<!-- tests TestChangeREADMECLI", "your-own-tables.md")
	if len(blocks) != 3 {
		t.Fatalf("docs: %d blocks marked for TestChangeREADMECLI, want 3 (hold_payment.json, holds-1.json, session)", len(blocks))
	}
	l := newLab(t)
	shop := userSchema(t, l, `create table %[1]s.payments(payment_id bigint primary key, merchant_id integer not null,
	  status text not null, amount_cents integer not null, hold_reason text, lock_version integer not null);
	  insert into %[1]s.payments values (5, 42, 'captured', 300, null, 0), (7, 42, 'captured', 1200, null, 3)`)
	dir := t.TempDir()
	for i, name := range []string{"hold_payment.json", "holds-1.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(blocks[i], "shop.payments", shop+".payments")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := shellEnv("CHUNKS_DSN="+l.ChunksDSN, "CHUNKS_SCHEMA="+l.Name)
	ran := 0
	for _, line := range strings.Split(strings.TrimSpace(blocks[2]), "\n") {
		command, comment, ok := strings.Cut(line, "#")
		if !ok {
			t.Fatalf("guide line without its comment: %q", line)
		}
		comment = strings.ReplaceAll(strings.TrimSpace(comment), "shop.payments", shop+".payments")
		wantCode := 0
		if rest, failure := strings.CutPrefix(comment, "exit "); failure {
			code, says, _ := strings.Cut(rest, ", on stderr: ")
			var err error
			if wantCode, err = strconv.Atoi(code); err != nil {
				t.Fatalf("guide comment %q: %v", comment, err)
			}
			comment = says
		}
		cmd := exec.Command("sh", "-e", "-c", strings.TrimSpace(command))
		cmd.Env, cmd.Dir = env, dir
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			code = exitErr.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		out := stdout.String()
		if wantCode != 0 {
			out = stderr.String()
		}
		var parts []string
		for _, p := range strings.Split(comment, "…") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		if code != wantCode || !containsInOrder(out, parts) {
			t.Errorf("%s: exit %d, want %d; it printed\n%s%s\nwant, in order: %q", command, code, wantCode, stdout.String(), stderr.String(), parts)
		}
		ran++
	}
	if ran != 8 {
		t.Errorf("ran %d guide command lines, want 8", ran)
	}
}

// containsInOrder is whether s holds every part, one after the other.
func containsInOrder(s string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}
