package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// terminalSafe is s for a terminal: every control character (C0, DEL, C1)
// and every Unicode format character (category Cf: the bidi overrides such
// as U+202E, zero-width characters) is written as an escape (\x1b, \u202e,
// \U000e0001), and so is each byte of invalid UTF-8 (\xff). A value from
// the database then cannot clear the screen, move the cursor, set the
// window title or reorder what the line shows. Everything else, other
// scripts included, is left as it is. Human output passes every string that
// came from the database (or from the server's error messages) through it.
func terminalSafe(s string) string {
	if strings.IndexFunc(s, unsafeRune) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r) && r < utf8.RuneSelf:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func unsafeRune(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }
