package tests

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestDocsGoExamples checks docs/go.md's "Runnable examples" against the
// packages, as go/doc (pkg.go.dev's reading) attaches their examples: each
// function or type the issue names has an example with an // Output:
// comment (so go test runs it and compares), every example of the three
// packages is named in the guide, and the guide's command runs them all.
func TestDocsGoExamples(t *testing.T) {
	root := pgtest.ModuleRoot(t)
	guide, err := os.ReadFile(filepath.Join(root, "docs", "go.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(guide), "\ngo test -run Example ./driver ./fleet ./router\n") {
		t.Error("docs/go.md: no `go test -run Example ./driver ./fleet ./router`")
	}
	want := map[string][]string{
		"driver": {"", "Register", "RunChunk", "Drain", "Report", "RegisterChange"},
		"fleet":  {"Worker", "PauseAfter"},
		"router": {"Install", "Cluster"},
	}
	for pkg, symbols := range want {
		got := examplesOf(t, filepath.Join(root, pkg))
		for _, s := range symbols {
			if out, ok := got[s]; !ok || out == "" {
				t.Errorf("%s: no runnable example of %q (with an // Output: comment): %v", pkg, s, got)
			}
		}
		for s := range got {
			if !strings.Contains(string(guide), "`Example"+s+"`") {
				t.Errorf("docs/go.md does not name %s's example `Example%s`", pkg, s)
			}
			if !slices.Contains(symbols, s) {
				t.Errorf("%s: example of %q is not in this test's list", pkg, s)
			}
		}
	}
}

// examplesOf maps the symbols of the package in dir that have an example
// ("" for the package's own) to its expected output, as go/doc reads them.
func examplesOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(p, "_test.go") && !strings.HasSuffix(f.Name.Name, "_test") {
			continue // the package's internal tests
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "github.com/chunks-dev/chunks/"+filepath.Base(dir))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	add := func(name string, examples []*doc.Example) {
		for _, e := range examples {
			got[name] = e.Output
		}
	}
	add("", pkg.Examples)
	for _, f := range pkg.Funcs {
		add(f.Name, f.Examples)
	}
	for _, typ := range pkg.Types {
		add(typ.Name, typ.Examples)
		for _, f := range typ.Funcs {
			add(f.Name, f.Examples)
		}
	}
	return got
}
