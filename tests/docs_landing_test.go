package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// The README's test command is the one .ci/run runs, and its psql and Go
// tastes are excerpts, line for line and in order, of docs/psql.md's
// replayed session and docs/go.md's block: the landing page cannot drift
// from what the tests run.
func TestREADMELanding(t *testing.T) {
	root := pgtest.ModuleRoot(t)
	read := func(path string) string {
		data, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	readme, ci := read("README.md"), read(".ci/run")
	command := regexp.MustCompile("(?m)^(go test [^#\n]*?) +#").FindStringSubmatch(readme)
	if command == nil {
		t.Fatal("README.md: no go test command")
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(command[1]) + `$`).MatchString(ci) {
		t.Errorf(".ci/run does not run the README's test command %q", command[1])
	}
	for _, c := range []struct{ heading, guide, marker string }{
		{"## A taste of psql", "psql.md", "<!-- tests TestREADMERoles psql session"},
		{"## A taste of Go", "go.md", ""},
	} {
		taste := blockAfter(t, readme, c.heading)
		var whole string
		if c.marker != "" {
			whole = pgtest.DocBlocks(t, c.marker, c.guide)[0]
		} else {
			whole = blockAfter(t, read(filepath.Join("docs", c.guide)), "# The Go API")
		}
		rest := strings.Split(whole, "\n")
		for _, line := range strings.Split(strings.TrimRight(taste, "\n"), "\n") {
			i := indexOf(rest, line)
			if i < 0 {
				t.Errorf("README %s: %q is not a line of docs/%s's block, after the ones before it", c.heading, line, c.guide)
				break
			}
			rest = rest[i+1:]
		}
	}
}

// blockAfter is the first fenced block after the line heading of text.
func blockAfter(t *testing.T, text, heading string) string {
	t.Helper()
	_, after, ok := strings.Cut("\n"+text, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("no heading %q", heading)
	}
	_, after, ok = strings.Cut(after, "```")
	if ok {
		_, after, ok = strings.Cut(after, "\n")
	}
	block, _, closed := strings.Cut(after, "\n```")
	if !ok || !closed {
		t.Fatalf("no block after %q", heading)
	}
	return block + "\n"
}

// indexOf is the index of line in lines, or -1.
func indexOf(lines []string, line string) int {
	for i, l := range lines {
		if l == line {
			return i
		}
	}
	return -1
}

// Every "`table` (migration N)" of the guides names the migration that
// creates that table.
func TestDocsMigrationNumbers(t *testing.T) {
	root := pgtest.ModuleRoot(t)
	mention := regexp.MustCompile("`(\\w+)`(?:\\.\\w+)? \\(migration (\\d+)\\)")
	found := 0
	for _, page := range docsPages(t, root) {
		data, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mention.FindAllStringSubmatch(string(data), -1) {
			files, err := filepath.Glob(filepath.Join(root, "sql", "migrations", "00"+m[2]+"_*.sql"))
			if err != nil || len(files) != 1 {
				t.Fatalf("%s: migration %s: %v %v", page, m[2], files, err)
			}
			sql, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(sql), "create table if not exists {{ .schema }}."+m[1]+"(") {
				t.Errorf("%s: %s: %s does not create table %s", page, m[0], filepath.Base(files[0]), m[1])
			}
			found++
		}
	}
	if found == 0 {
		t.Error("no guide says which migration made a table")
	}
}
