package main

import "testing"

func TestTerminalSafe(t *testing.T) {
	for in, want := range map[string]string{
		"festival-2026":        "festival-2026",
		"Größe 大":              "Größe 大",
		"a\x1b[2Jb":            `a\x1b[2Jb`,
		"tab\there\nnew":       `tab\x09here\x0anew`,
		"del\x7f c1\u0085":     `del\x7f c1\u0085`,
		"\u202eacme\u200b":     `\u202eacme\u200b`,
		"tag\U000e0001":        `tag\U000e0001`,
		"bad \xff\xfe utf-8":   `bad \xff\xfe utf-8`,
		"bell\a and \u00adshy": `bell\x07 and \u00adshy`,
	} {
		if got := terminalSafe(in); got != want {
			t.Errorf("terminalSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
