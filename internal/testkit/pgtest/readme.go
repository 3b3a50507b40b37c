package pgtest

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// ReadmeBlocks is the block after each line of the Markdown file at path that
// starts with marker (an HTML comment such as "<!-- tests TestX", after any
// indentation, as in a list item), in order: a fenced block, whose lines
// lose the indentation of its fence, or a table, its rows.
func ReadmeBlocks(t testing.TB, path, marker string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(strings.TrimLeft(lines[i], " "), marker) {
			continue
		}
		start := i + 1
		for start < len(lines) && !strings.HasPrefix(strings.TrimLeft(lines[start], " "), "```") && !strings.HasPrefix(lines[start], "|") {
			start++
		}
		if start >= len(lines) {
			t.Fatalf("%s:%d: a marker without its block", path, i+1)
		}
		if strings.HasPrefix(lines[start], "|") { // a table: its rows
			end := start
			for end < len(lines) && strings.HasPrefix(lines[end], "|") {
				end++
			}
			blocks = append(blocks, strings.Join(lines[start:end], "\n")+"\n")
			i = end
			continue
		}
		indent := lines[start][:len(lines[start])-len(strings.TrimLeft(lines[start], " "))]
		end := start + 1
		for end < len(lines) && lines[end] != indent+"```" {
			end++
		}
		if end >= len(lines) {
			t.Fatalf("%s:%d: a marked block without its end", path, i+1)
		}
		var block []string
		for _, l := range lines[start+1 : end] {
			block = append(block, strings.TrimPrefix(l, indent))
		}
		blocks = append(blocks, strings.Join(block, "\n")+"\n")
		i = end
	}
	return blocks
}

// prompt is psql's prompt in a transcript: db=# or db=> for a new
// statement, db-# or db'# (db-> or db'>) for one that goes on.
var prompt = regexp.MustCompile(`^\w+[=\-'][#>] ?`)

// Transcript splits a psql transcript into what was typed (after the
// prompts) and what psql printed (every other line, as TrimLines has it).
func Transcript(block string) (input, output string) {
	var in, out []string
	for _, line := range strings.Split(block, "\n") {
		if p := prompt.FindString(line); p != "" {
			in = append(in, line[len(p):])
		} else {
			out = append(out, line)
		}
	}
	return strings.Join(in, "\n") + "\n", TrimLines(strings.Join(out, "\n"))
}

// TrimLines drops trailing white space from each line and blank lines at
// the end: psql pads its headers, a guide does not.
func TrimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}
