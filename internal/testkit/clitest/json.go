package clitest

import (
	"encoding/json"
	"testing"
)

// MustJSON is v as JSON text (a plan file, a process's stdin); the test
// fails if v has none.
func MustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
