package cli

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// runGuideLines runs each line of a guide's block with sh -e in dir, with
// env, and checks that it prints what its comment says (after rewrite):
// the parts between "…" in order on stdout, or "exit N, on stderr: …" for
// a failure; a comment in parentheses is a remark, and only the exit
// status 0 is checked. It returns how many lines ran.
func runGuideLines(t *testing.T, block string, env []string, dir string, rewrite func(string) string) int {
	t.Helper()
	ran := 0
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		command, comment, ok := strings.Cut(line, "#")
		if !ok {
			t.Fatalf("guide line without its comment: %q", line)
		}
		comment = rewrite(strings.TrimSpace(comment))
		wantCode := 0
		if rest, failure := strings.CutPrefix(comment, "exit "); failure {
			code, says, _ := strings.Cut(rest, ", on stderr: ")
			var err error
			if wantCode, err = strconv.Atoi(code); err != nil {
				t.Fatalf("guide comment %q: %v", comment, err)
			}
			comment = says
		}
		cmd := exec.Command("sh", "-e", "-c", strings.TrimSpace(command))
		cmd.Env, cmd.Dir = env, dir
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			code = exitErr.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		out := stdout.String()
		if wantCode != 0 {
			out = stderr.String()
		}
		var parts []string
		if !strings.HasPrefix(comment, "(") {
			for _, p := range strings.Split(comment, "…") {
				if p = strings.TrimSpace(p); p != "" {
					parts = append(parts, p)
				}
			}
		}
		if code != wantCode || !containsInOrder(out, parts) {
			t.Errorf("%s: exit %d, want %d; it printed\n%s%s\nwant, in order: %q", command, code, wantCode, stdout.String(), stderr.String(), parts)
		}
		ran++
	}
	return ran
}

// containsInOrder is whether s holds every part, one after the other.
func containsInOrder(s string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}
