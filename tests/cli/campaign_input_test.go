package cli

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// campaignMemoryBound is the most a campaign create that reads a
// hostile file may hold: the binary itself takes about 15 MB.
const campaignMemoryBound = 60 << 20

// timeCmd is GNU time, which reports a child's peak resident memory. The
// test's own rusage of a child cannot: Go starts children with vfork, and
// Linux then counts the parent's peak as the child's.
const timeCmd = "/usr/bin/time"

// TestCampaignFileMemoryBounded: a campaign file costs memory that follows
// its targets, not its text. A JSON array of nothing but whitespace past
// the size limit, and one target carrying a 100 MiB string (in an extra
// key, and as the id itself), are refused with exit 2 naming the limit
// (and the target's index) while the process stays under 60 MB; JSON Lines
// with a 100 MiB line too. Nothing is written.
func TestCampaignFileMemoryBounded(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	dir := t.TempDir()
	huge := strings.Repeat("x", 1<<20)
	write := func(name string, parts ...string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		for _, p := range parts {
			if p == "<100 MiB>" {
				for range 100 {
					if _, err := w.WriteString(huge); err != nil {
						t.Fatal(err)
					}
				}
				continue
			}
			if _, err := w.WriteString(p); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	spaces := strings.Repeat(" ", 1<<20)
	blank := make([]string, 0, 131)
	blank = append(blank, "[")
	for range driver.MaxCampaignInput>>20 + 1 {
		blank = append(blank, spaces)
	}
	blank = append(blank, "]")
	entry := `{"id": 1, "revision": 0, "qty": 1}`
	for _, c := range []struct {
		name, path, msg string
	}{
		{"whitespace past the limit", write("blank.json", blank...), "input: larger than 128 MiB"},
		{"a 100 MiB string in an extra key", write("note.json", "[", entry, `, {"id": 2, "revision": 0, "qty": 1, "note": "`, "<100 MiB>", `"}]`),
			"targets[1]: longer than 4096 bytes"},
		{"a 100 MiB id", write("id.json", `[{"id": "`, "<100 MiB>", `", "revision": 0, "qty": 1}]`), "targets[0]: longer than 4096 bytes"},
		{"a 100 MiB line", write("note.jsonl", entry, "\n", `{"id": 2, "note": "`, "<100 MiB>", "\"}\n"), "line 2: longer than 4096 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(l.Globals(), "campaign", "create", "--tenant", "acme", "--chunk-size", "10", "--allow-partial", "big", c.path)
			if _, err := os.Stat(timeCmd); err != nil {
				wantFailure(t, clitest.Run(t, args...), 2, c.msg) // refused as it should be; its memory needs GNU time
				pgtest.RequireTool(t, err, timeCmd, "time")
			}
			rss := filepath.Join(dir, "rss")
			wantFailure(t, clitest.RunWith(t, clitest.Options{Under: []string{timeCmd, "--format", "%M", "--output", rss}}, args...), 2, c.msg)
			text, err := os.ReadFile(rss)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Fields(string(text)) // "Command exited with non-zero status 2", then %M
			if len(lines) == 0 {
				t.Fatalf("%s wrote nothing", timeCmd)
			}
			kib, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
			if err != nil {
				t.Fatalf("%s wrote %q: %v", timeCmd, text, err)
			}
			if kib<<10 > campaignMemoryBound {
				t.Fatalf("campaign create took %d MB of memory for %s (at most %d MB)", kib>>10, c.name, campaignMemoryBound>>20)
			}
			t.Logf("%s: refused with a peak of %d MB of memory", c.name, kib>>10)
		})
	}
	var campaigns, jobs int
	if err := l.Conn.QueryRow(ctx, "select (select count(*) from campaigns), (select count(*) from jobs)").Scan(&campaigns, &jobs); err != nil {
		t.Fatal(err)
	}
	if campaigns != 0 || jobs != 0 {
		t.Fatalf("%d campaigns and %d jobs after the refusals", campaigns, jobs)
	}
}
