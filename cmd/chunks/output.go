package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
)

// stdout is where results go; errors and progress go to stderr.
var stdout io.Writer = os.Stdout

func printJSON(v any) error {
	return json.NewEncoder(stdout).Encode(v) // one line: easy for scripts and jq
}

// newTable is an aligned plain-text table on stdout.
func newTable(header ...any) table.Writer {
	t := table.NewWriter()
	t.SetOutputMirror(stdout)
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

func say(format string, args ...any) {
	fmt.Fprintf(stdout, format+"\n", args...)
}

// plural is "1 order", "2 orders".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
