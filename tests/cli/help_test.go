package cli

import (
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// TestHelp: every command's --help (and chunks help COMMAND) exits 0 and
// shows a real example.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"migrate", "grant", "manifest", "check", "register", "inspect", "run", "drain", "report", "pause", "undo", "demo", "router"} {
		t.Run(name, func(t *testing.T) {
			for _, args := range [][]string{{name, "--help"}, {"help", name}} {
				out := wantOK(t, clitest.Run(t, args...))
				if !strings.Contains(out, "Example") || !strings.Contains(out, "chunks "+name) {
					t.Fatalf("chunks %s: no example of chunks %s:\n%s", strings.Join(args, " "), name, out)
				}
			}
		})
	}
	// manifest needs no database, so its help offers no --dsn or --schema.
	if out := wantOK(t, clitest.Run(t, "manifest", "--help")); strings.Contains(out, "--dsn") || strings.Contains(out, "--schema") {
		t.Fatalf("chunks manifest --help offers database flags:\n%s", out)
	}
	out := wantOK(t, clitest.Run(t, "--help"))
	for _, name := range []string{"migrate", "grant", "manifest", "check", "register", "inspect", "run", "drain", "report", "pause", "undo", "demo"} {
		if !strings.Contains(out, "   "+name+" ") {
			t.Fatalf("chunks --help does not list %s:\n%s", name, out)
		}
	}
}
