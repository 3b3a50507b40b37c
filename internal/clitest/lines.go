package clitest

import (
	"strings"
	"sync"
)

// output is what a process wrote on one stream, kept whole and read as lines
// while the process still writes (safe for concurrent use).
type output struct {
	mu   sync.Mutex
	text strings.Builder
}

// Write keeps p.
func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.text.Write(p)
}

// String is everything written so far.
func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.text.String()
}

// lines is the complete lines written so far (without their "\n"), and with
// all a last line that has no "\n" yet.
func (o *output) lines(all bool) []string {
	text := o.String()
	if !all {
		text = text[:strings.LastIndexByte(text, '\n')+1]
	}
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}
