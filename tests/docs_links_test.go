package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Every relative link in README.md, CHANGELOG.md, BENCHMARKS.md and docs/*.md resolves: to a file of
// the repository, and a #fragment to a heading of that file by GitHub's
// anchor rules. No network: links with a scheme are not followed.
func TestDocsLinks(t *testing.T) {
	root := pgtest.ModuleRoot(t)
	for _, bad := range docsLinkProblems(t, root, docsPages(t, root)) {
		t.Error(bad)
	}
}

// The checker finds what it is there for: a missing file, a missing
// heading, and a heading of another file.
func TestDocsLinksCatchBreakage(t *testing.T) {
	dir := t.TempDir()
	page := "# Title\n\n## Two words, and `code`!\n\n```\n[not a link](nowhere.md)\n```\n\n" +
		"[ok](#two-words-and-code) [ok](#title) [ok](other.md#other) [ok](other.md) [ok](https://example.com/x)\n" +
		"[bad](gone.md) [bad](#no-such-heading) [bad](other.md#title)\n" +
		"ok: README \"Two commands\"; bad: README \"Roles\", and \"Safety\" in the README\n"
	for name, text := range map[string]string{"page.md": page, "other.md": "# Other\n", "README.md": "# chunks\n\n## Two commands\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := docsLinkProblems(t, dir, []string{"page.md"})
	want := []string{
		"page.md:10: gone.md: no such file",
		"page.md:10: #no-such-heading: no such heading in page.md",
		"page.md:10: other.md#title: no such heading in other.md",
		`page.md:11: README "Roles": no such heading in README.md (link to the guide that has it)`,
		`page.md:11: "Safety" in the README: no such heading in README.md (link to the guide that has it)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// docsPages is every *.md of the repository's root (README.md,
// CHANGELOG.md, BENCHMARKS.md) and of docs/, relative to root.
func docsPages(t *testing.T, root string) []string {
	t.Helper()
	var pages []string
	for _, dir := range []string{".", "docs"} {
		found, err := filepath.Glob(filepath.Join(root, dir, "*.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			pages = append(pages, filepath.Join(dir, filepath.Base(f)))
		}
	}
	if !slices.Contains(pages, "README.md") || !slices.Contains(pages, "CHANGELOG.md") {
		t.Fatalf("no README.md or CHANGELOG.md among %v", pages)
	}
	return pages
}

var (
	// mdLink is an inline link or image: [text](target) or ![alt](target).
	mdLink = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	// inlineCode is a code span, whose text is no link.
	inlineCode = regexp.MustCompile("`[^`]*`")
	// mdHeading is an ATX heading.
	mdHeading = regexp.MustCompile(`^#{1,6} +(.*?)#*\s*$`)
	// readmeMention is a section of the README named in words:
	// README "Heading", or "Heading" in the README.
	readmeMention = regexp.MustCompile(`README "([^"]+)"|"([^"]+)" in the README`)
	// notSlug is what GitHub drops from a heading's text for its anchor.
	notSlug = regexp.MustCompile(`[^\p{L}\p{N}\p{M}_\- ]`)
)

// docsLinkProblems lists each relative link of pages (paths under root)
// that does not resolve, as "page:line: target: why".
func docsLinkProblems(t *testing.T, root string, pages []string) []string {
	t.Helper()
	var problems []string
	anchors := map[string]map[string]bool{}
	headings := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		data, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		a := map[string]bool{}
		seen := map[string]int{}
		forEachProse(string(data), func(_ int, line string) {
			m := mdHeading.FindStringSubmatch(line)
			if m == nil {
				return
			}
			slug := githubSlug(m[1])
			if n := seen[slug]; n > 0 {
				a[slug+"-"+strconv.Itoa(n)] = true
			} else {
				a[slug] = true
			}
			seen[slug]++
		})
		anchors[page] = a
		return a
	}
	for _, page := range pages {
		data, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		forEachProse(string(data), func(n int, line string) {
			// A section of the README named in words, as the guides once
			// were: it must still be there.
			for _, m := range readmeMention.FindAllStringSubmatch(line, -1) {
				if !headings("README.md")[githubSlug(m[1]+m[2])] {
					problems = append(problems, page+":"+strconv.Itoa(n)+": "+m[0]+": no such heading in README.md (link to the guide that has it)")
				}
			}
			for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = filepath.Join(filepath.Dir(page), file)
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						problems = append(problems, page+":"+strconv.Itoa(n)+": "+target+": no such file")
						continue
					}
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") || !headings(dest)[frag] {
					problems = append(problems, page+":"+strconv.Itoa(n)+": "+target+": no such heading in "+filepath.Base(dest))
				}
			}
		})
	}
	return problems
}

// forEachProse calls f with each line (numbered from 1) of a Markdown text
// that is outside a fenced code block.
func forEachProse(text string, f func(n int, line string)) {
	fence := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			fence = !fence
			continue
		}
		if !fence {
			f(i+1, line)
		}
	}
}

// githubSlug is the anchor GitHub gives a heading: its text without
// markup, lowercase, punctuation dropped, each space a '-'.
func githubSlug(heading string) string {
	text := strings.ToLower(strings.TrimSpace(heading))
	text = mdLinkText.ReplaceAllString(text, "$1")
	return strings.ReplaceAll(notSlug.ReplaceAllString(text, ""), " ", "-")
}

// mdLinkText is a link in a heading, whose text alone counts.
var mdLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
