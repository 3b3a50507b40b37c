package main

import (
	"fmt"
	"io"
	"strings"
)

// Markdown for chunks plan --markdown, to paste into a pull request or a
// ticket: text from the database (a problem, a target) never escapes the
// cell or the code block it is put in.

// mdCell is s made safe for one cell of a Markdown table: no line breaks,
// no column separator, no HTML, no emphasis or link syntax.
func mdCell(s string) string {
	s = terminalSafe(s)
	r := strings.NewReplacer("\r", " ", "\n", " ", "\\", "\\\\", "|", "\\|", "<", "&lt;", ">", "&gt;", "`", "\\`",
		"*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]")
	return r.Replace(s)
}

// mdCode writes body as a fenced code block of lang, its fence longer than
// any run of backticks in body.
func mdCode(out io.Writer, lang, body string) {
	longest, run := 0, 0
	for _, r := range body {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	fmt.Fprintf(out, "%s%s\n%s\n%s\n", fence, lang, strings.TrimRight(body, "\n"), fence)
}
