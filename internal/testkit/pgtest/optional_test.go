package pgtest

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRequireTool runs a test that needs a missing tool in a child process,
// once as on a developer's machine and once under CI=true: the first skips
// with the package name, the second fails with it.
func TestRequireTool(t *testing.T) {
	if os.Getenv("PGTEST_REQUIRE_TOOL_CHILD") == "1" {
		RequireTool(t, errors.New("not on PATH"), "frobnicate", "frob-tools")
		t.Fatal("RequireTool returned although the tool is missing")
	}
	if RequireTool(t, nil, "present", "pkg"); t.Skipped() || t.Failed() {
		t.Fatal("a tool that is there must neither skip nor fail")
	}
	for _, tc := range []struct {
		ci       string
		wantFail bool
		want     string
	}{
		{"", false, "--- SKIP: TestRequireTool"},
		{"false", false, "--- SKIP: TestRequireTool"},
		{"true", true, "--- FAIL: TestRequireTool"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRequireTool$", "-test.v")
		cmd.Env = append(os.Environ(), "PGTEST_REQUIRE_TOOL_CHILD=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail {
			t.Errorf("CI=%q: failed = %v, want %v:\n%s", tc.ci, failed, tc.wantFail, out)
		}
		for _, want := range []string{tc.want, "frobnicate is not installed (not on PATH): apt-get install -y frob-tools"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("CI=%q: output lacks %q:\n%s", tc.ci, want, out)
			}
		}
	}
}
