package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/chunks-dev/chunks/driver"
)

// printJSON prints v as one line of JSON: easy for scripts and jq.
func printJSON(out io.Writer, v any) error {
	return json.NewEncoder(out).Encode(v)
}

// newTable is an aligned plain-text table, rendered to out.
func newTable(out io.Writer, header ...any) table.Writer {
	t := table.NewWriter()
	t.SetOutputMirror(out)
	t.SetStyle(table.StyleLight)
	t.Style().Options.SeparateRows = false
	t.AppendHeader(table.Row(header))
	return t
}

// ids prints a list of ids compactly: 1-10 12 14-15.
func ids(list []int64) string {
	if len(list) == 0 {
		return "none"
	}
	var parts []string
	for i := 0; i < len(list); {
		j := i
		for j+1 < len(list) && list[j+1] == list[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", list[i], list[j]))
		} else {
			parts = append(parts, fmt.Sprint(list[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, " ")
}

// keyList prints a job's keys: integers as ids does, other keys (text,
// uuid: database values) each as it is, made safe for a terminal.
func keyList(keys []driver.Key) string {
	list := make([]string, len(keys))
	ints := make([]int64, 0, len(keys))
	for i, k := range keys {
		if n, ok := k.Int(); ok {
			ints = append(ints, n)
		}
		list[i] = terminalSafe(k.String())
	}
	if len(ints) == len(keys) {
		return ids(ints)
	}
	return strings.Join(list, " ")
}

// keyCell is a key in a table: an integer as a number (aligned as one), any
// other key as text made safe for a terminal.
func keyCell(k driver.Key) any {
	if n, ok := k.Int(); ok {
		return n
	}
	return terminalSafe(k.String())
}

// say prints one line of text to out. A failed write is not lost: the
// writer that action gives a command remembers it (resultWriter).
func say(out io.Writer, format string, args ...any) {
	fmt.Fprintf(out, format+"\n", args...)
}

// plural is "1 order", "2 orders".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// resultWriter is a command's out: it remembers the first failed write
// (stdout closed, a full disk), which the command then returns, and
// writes nothing after it.
type resultWriter struct {
	w   io.Writer
	err error
}

// Write writes p, or fails at once after a failed write.
func (r *resultWriter) Write(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.w.Write(p)
	if err != nil {
		r.err = fmt.Errorf("writing the result: %w", err)
	}
	return n, r.err
}
