package pgtest

import (
	"os"
	"path/filepath"
	"testing"
)

// DocPath is the path of the guide docs/name of this module, found from
// the test's working directory (any package of the module) upwards.
func DocPath(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(ModuleRoot(t), "docs", name)
}

// ModuleRoot is the folder of this module's go.mod, the nearest one above
// the test's working directory.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		} else if !os.IsNotExist(err) {
			t.Fatal(err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("pgtest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// DocBlocks is ReadmeBlocks over the guides docs/<guide>, in the order
// given: the blocks a test replays, wherever its text lives.
func DocBlocks(t testing.TB, marker string, guides ...string) []string {
	t.Helper()
	var blocks []string
	for _, g := range guides {
		blocks = append(blocks, ReadmeBlocks(t, DocPath(t, g), marker)...)
	}
	return blocks
}

// WantDocBlocks is DocBlocks, failing the test unless there are exactly
// want blocks (what names them, for the message).
func WantDocBlocks(t testing.TB, want int, what, marker string, guides ...string) []string {
	t.Helper()
	blocks := DocBlocks(t, marker, guides...)
	if len(blocks) != want {
		t.Fatalf("docs: %d blocks marked %q in %v, want %d (%s)", len(blocks), marker, guides, want, what)
	}
	return blocks
}
