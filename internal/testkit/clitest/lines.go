package clitest

import (
	"strings"
	"sync"
)

// Output is what a process (or a logger) wrote on one stream, kept whole
// and read while it still writes: safe for concurrent use.
type Output struct {
	mu   sync.Mutex
	text strings.Builder
}

// Write keeps p.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.text.Write(p)
}

// String is everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.text.String()
}

// lines is the complete lines written so far (without their "\n"), and with
// all a last line that has no "\n" yet.
func (o *Output) lines(all bool) []string {
	text := o.String()
	if !all {
		text = text[:strings.LastIndexByte(text, '\n')+1]
	}
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}
