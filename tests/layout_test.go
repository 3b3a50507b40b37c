package tests

import (
	"os/exec"
	"strings"
	"testing"
)

// layer is each package's layer in docs/layout.md "How the Go packages
// depend on each other", 1 the top; the test harness is apart (0).
var layer = map[string]int{
	"cmd/chunks":               1,
	"internal/app/web":         2,
	"internal/app/metrics":     2,
	"internal/app/bench":       2,
	"fleet":                    3,
	"router":                   3,
	"pace":                     4,
	"driver":                   5,
	"sql":                      6,
	"internal/chunktx":         6,
	"internal/dbutil":          7,
	"internal/wire":            7,
	"internal/childenv":        7,
	"internal/localpg":         7,
	"internal/testkit/pgtest":  0,
	"internal/testkit/clitest": 0,
}

// The package graph reads top to bottom: a package of the running program
// imports only packages of lower layers, and never the test harness; the
// harness imports no package of the running program's upper layers. Every
// package of the module has its layer, so a new one must be placed.
func TestPackagesImportOnlyDownward(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/chunks-dev/chunks/"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok || strings.HasPrefix(pkg, "tests") {
			continue
		}
		from, placed := layer[pkg]
		if !placed {
			t.Errorf("package %s has no layer in docs/layout.md (and this test's map)", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			to := layer[dep]
			switch {
			case from != 0 && to == 0:
				t.Errorf("%s imports the test harness %s", pkg, dep)
			case from == 0 && to != 0 && to < 5:
				t.Errorf("the test harness %s imports %s, above the driver", pkg, dep)
			case from != 0 && to <= from:
				t.Errorf("%s (layer %d) imports %s (layer %d): only lower layers", pkg, from, dep, to)
			}
		}
	}
}
