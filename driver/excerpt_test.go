package driver

import (
	"strings"
	"testing"
)

func TestExcerpt(t *testing.T) {
	cases := []struct {
		value string
		quote bool
		want  string
	}{
		{"", true, `""`},
		{"abc", false, "abc"},
		{"a\x1bb", true, `"a\x1bb"`},
		{strings.Repeat("x", 64), false, strings.Repeat("x", 64)},
		{strings.Repeat("x", 65), false, strings.Repeat("x", 64) + "… (65 characters)"},
		{strings.Repeat("é", 100), true, `"` + strings.Repeat("é", 64) + `"… (100 characters)`}, // cut between characters, not bytes
		{"1" + strings.Repeat("0", 400), false, "1" + strings.Repeat("0", 63) + "… (401 characters)"},
	}
	for _, c := range cases {
		if got := Excerpt(c.value, c.quote); got != c.want {
			t.Errorf("Excerpt(%.20q…, %t) = %q, want %q", c.value, c.quote, got, c.want)
		}
	}
}

func TestExcerptWords(t *testing.T) {
	long := strings.Repeat("9", 100)
	for message, want := range map[string]string{
		"":                                      "",
		"a short message":                       "a short message",
		long + " is out of range for int64":     long[:64] + "… (100 characters) is out of range for int64",
		"two  spaces, " + long + " and " + long: "two  spaces, " + long[:64] + "… (100 characters) and " + long[:64] + "… (100 characters)",
	} {
		if got := excerptWords(message); got != want {
			t.Errorf("excerptWords(%.30q…) = %q, want %q", message, got, want)
		}
	}
}
