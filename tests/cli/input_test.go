package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// TestInputSizeBounded: manifest and register read at most 1 MiB of input
// and refuse more at once (exit 2, naming the limit), from a file, from
// /dev/zero (endless) and from stdin; a plan of exactly 1 MiB is read.
func TestInputSizeBounded(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	dir := t.TempDir()
	plan := `{"job_id": "big", "tenant": "t", "targets": [{"id": 1, "revision": 0, "qty": 1}], "chunk_size": 1, "allow_partial": true}`
	items := `[{"id": 1, "revision": 0, "qty": 1}]`
	padded := func(name, json string, size int) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(json+strings.Repeat(" ", size-len(json))), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	limit := "is larger than the 1 MiB limit (more than 1048576 bytes)"
	manifest := []string{"manifest", "--job-id", "big", "--tenant", "t", "--chunk-size", "1", "--allow-partial"}
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
	}{
		{"manifest /dev/zero", append(manifest, "/dev/zero"), ""},
		{"manifest, a file one byte over", append(manifest, padded("items.json", items, driver.MaxInputBytes+1)), ""},
		{"manifest, stdin one byte over", append(manifest, "-"), items + strings.Repeat(" ", driver.MaxInputBytes)},
		{"register /dev/zero", append(l.Globals(), "register", "/dev/zero"), ""},
		{"register, a file one byte over", append(l.Globals(), "register", padded("plan.json", plan, driver.MaxInputBytes+1)), ""},
		{"register, stdin of 50 MB", append(l.Globals(), "register", "-"), plan + strings.Repeat(" ", 50_000_000)},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantFailure(t, clitest.RunWith(t, clitest.Options{Stdin: c.stdin}, c.args...), 2, limit)
		})
	}
	var jobs int
	if err := l.Conn.QueryRow(ctx, "select count(*) from jobs").Scan(&jobs); err != nil || jobs != 0 {
		t.Fatalf("%d jobs after the refusals (%v)", jobs, err)
	}
	// Exactly at the limit is fine.
	wantRegistered(t, l.Conn, l.Chunks(t, "register", "--json", padded("exact.json", plan, driver.MaxInputBytes)), registered{JobID: "big", Created: true})
	out := wantOK(t, clitest.Run(t, append(manifest, padded("exact-items.json", items, driver.MaxInputBytes))...))
	if !strings.Contains(out, `"targets":[{"id":1,"revision":0,"qty":1}]`) {
		t.Fatalf("manifest of 1 MiB: %s", out)
	}
}

// TestByteOrderMark: a plan or items file that starts with a UTF-8 byte
// order mark is refused, saying so.
func TestByteOrderMark(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	bom := "\xef\xbb\xbf"
	path := filepath.Join(t.TempDir(), "items.json")
	if err := os.WriteFile(path, []byte(bom+`[{"id": 1, "revision": 0, "qty": 1}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	wantFailure(t, clitest.Run(t, "manifest", "--job-id", "j", "--tenant", "t", "--chunk-size", "1", "--allow-partial", path), 2,
		"targets: starts with a UTF-8 byte order mark")
	plan := fmt.Sprintf(`%s{"job_id": "j", "tenant": "t", "targets": [{"id": 1, "revision": 0, "qty": 1}], "chunk_size": 1, "allow_partial": true}`, bom)
	wantFailure(t, clitest.RunWith(t, clitest.Options{Stdin: plan}, append(l.Globals(), "register", "-")...), 2,
		"plan: starts with a UTF-8 byte order mark")
}
