package cli

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// bashCompletionLib is what Debian's bash-completion package installs and
// an interactive bash sources: _get_comp_words_by_ref, which the bash
// script of chunks completion calls on every Tab.
const bashCompletionLib = "/usr/share/bash-completion/bash_completion"

// The bash script of chunks completion works as the docs say: sourcing it
// always works, but Tab needs the bash-completion package (docs/cli-guide.md
// and chunks completion --help name it). Without the package's functions,
// Tab fails with "_get_comp_words_by_ref: command not found"; with them, it
// completes "chunks mig" to migrate.
func TestCompletionBashNeedsBashCompletion(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("bash")
	pgtest.RequireTool(t, err, "bash", "bash")
	tab := func(prelude string) string { // press Tab after "chunks mig"
		t.Helper()
		cmd := exec.Command("bash", "--norc", "--noprofile", "-c", prelude+`
source <(chunks completion bash) || exit 9
COMP_WORDS=(chunks mig) COMP_CWORD=1 COMP_LINE="chunks mig" COMP_POINT=10
_cli_bash_autocomplete
echo "tab: exit $? [${COMPREPLY[*]}]"`)
		cmd.Env = shellEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := tab(""); !strings.Contains(out, "_get_comp_words_by_ref: command not found") || !strings.HasSuffix(out, "tab: exit 127 []\n") {
		t.Errorf("Tab without bash-completion: %q", out)
	}
	for _, doc := range []string{readFile(t, pgtest.DocPath(t, "cli-guide.md")), wantOK(t, clitest.Run(t, "completion", "--help"))} {
		if !strings.Contains(doc, "bash-completion") {
			t.Errorf("does not name the bash-completion package:\n%s", doc)
		}
	}
	_, err = os.Stat(bashCompletionLib)
	pgtest.RequireTool(t, err, "the bash-completion package's functions", "bash-completion")
	if out := tab("source " + bashCompletionLib + "\n"); out != "tab: exit 0 [migrate]\n" {
		t.Errorf("Tab with bash-completion: %q", out)
	}
}
