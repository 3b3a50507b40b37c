package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// The README's install block works as typed, from the repository's root,
// in a shell that has no chunks on its PATH yet: go install puts chunks
// into $(go env GOPATH)/bin (a GOPATH of the test's own; the module and
// build caches are the machine's, with no network), the PATH line finds
// it, and after the man page's line `man chunks` prints the page, which
// `go install` alone does not make findable.
func TestREADMEInstall(t *testing.T) {
	t.Parallel()
	root := pgtest.ModuleRoot(t)
	blocks := pgtest.ReadmeBlocks(t, filepath.Join(root, "README.md"), "<!-- tests TestREADMEInstall")
	if len(blocks) != 1 {
		t.Fatalf("README.md: %d blocks marked TestREADMEInstall, want 1", len(blocks))
	}
	lines := guideCommands(blocks[0])
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "go install ") || lines[3] != "man chunks" {
		t.Fatalf("README.md's install block: %q, want go install, PATH, the man page and man chunks", lines)
	}
	_, err := exec.LookPath("man")
	pgtest.RequireTool(t, err, "man", "man-db")
	caches := map[string]string{}
	for _, v := range []string{"GOCACHE", "GOMODCACHE"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		caches[v] = strings.TrimSpace(string(out))
	}
	gopath := t.TempDir()
	var env []string
	for _, kv := range pgtest.CleanEnv() {
		if !strings.HasPrefix(kv, "MANPATH=") { // man's own search, from PATH
			env = append(env, kv)
		}
	}
	env = append(env, "GOPATH="+gopath, "GOCACHE="+caches["GOCACHE"], "GOMODCACHE="+caches["GOMODCACHE"], "GOPROXY=off", "MANPAGER=cat")
	s := newGuideShell(t, env, root)
	if r := s.run("command -v chunks"); r.code == 0 {
		t.Fatalf("chunks is on the machine's PATH already (%s): the test cannot tell which one the README installs", strings.TrimSpace(r.stdout))
	}
	if r := s.run("man -w chunks"); r.code == 0 {
		t.Fatalf("a chunks man page is installed already (%s)", strings.TrimSpace(r.stdout))
	}
	s.data(strings.Join(lines[:3], "\n"))
	for command, want := range map[string]string{
		"command -v chunks": filepath.Join(gopath, "bin", "chunks") + "\n",
		"man -w chunks":     filepath.Join(gopath, "share", "man", "man1", "chunks.1") + "\n",
	} {
		if r := s.run(command); r.code != 0 || r.stdout != want {
			t.Errorf("%s: exit %d, %q, want %q", command, r.code, r.stdout+r.stderr, want)
		}
	}
	if r := s.run(lines[3]); r.code != 0 || !strings.Contains(r.stdout, "chunks - apply an approved bulk change") {
		t.Errorf("%s: exit %d\n%s%s", lines[3], r.code, r.stdout, r.stderr)
	}
	s.close()
}
