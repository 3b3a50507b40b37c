package driver

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ExcerptChars is how many characters of a refused value an error shows at
// most. The SQL functions' excerpt() shows as many.
const ExcerptChars = 64

// Excerpt is how an error shows a refused value: whole when it has at most
// [ExcerptChars] characters, else its first ExcerptChars characters, "…"
// and its length, so that a hostile value of a million characters makes a
// short message: "1000000000…" (401 characters). With quote, the value is
// shown as a Go-quoted string (control characters escaped).
func Excerpt(value string, quote bool) string {
	n := utf8.RuneCountInString(value)
	shown, suffix := value, ""
	if n > ExcerptChars {
		cut, i := 0, 0
		for cut < ExcerptChars {
			_, size := utf8.DecodeRuneInString(value[i:])
			i += size
			cut++
		}
		shown, suffix = value[:i], fmt.Sprintf("… (%d characters)", n)
	}
	if quote {
		shown = strconv.Quote(shown)
	}
	return shown + suffix
}

// excerptWords is message with each word (a run of characters between
// spaces) of more than [ExcerptChars] characters shown as its [Excerpt]:
// for the message of another library that quotes a value whole, as pgx's
// "can't scan into dest[0] (col: id): 9999… is out of range for int64".
func excerptWords(message string) string {
	words := strings.Split(message, " ")
	for i, w := range words {
		words[i] = Excerpt(w, false)
	}
	return strings.Join(words, " ")
}
