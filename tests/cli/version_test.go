package cli

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
	chunkssql "github.com/chunks-dev/chunks/sql"
)

// version is chunks version --json.
type version struct {
	Version       string `json:"version"`
	Revision      string `json:"revision"`
	Modified      bool   `json:"modified"`
	Go            string `json:"go"`
	SchemaVersion int    `json:"schema_version"`
}

// binaryVersion is what the build info of the binary at path says, and the
// schema version that migrate leaves.
func binaryVersion(t *testing.T, path string) version {
	t.Helper()
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := version{Version: info.Main.Version, Go: info.GoVersion}
	if i := slices.IndexFunc(info.Settings, func(s debug.BuildSetting) bool { return s.Key == "vcs.revision" }); i >= 0 {
		v.Revision = info.Settings[i].Value
	}
	v.Modified = slices.Contains(info.Settings, debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	// The schema version: what chunks migrate leaves in schema_version,
	// and the number of migration files (001 to N, none missing).
	s := pgtest.NewSchema(t)
	if err := s.Conn.QueryRow(ctx, "select max(version) from schema_version").Scan(&v.SchemaVersion); err != nil {
		t.Fatal(err)
	}
	files, err := fs.Glob(chunkssql.Migrations(), "*.sql")
	if err != nil || len(files) != v.SchemaVersion || v.SchemaVersion != driver.SchemaVersion() {
		t.Fatalf("migrate leaves version %d; %d migration files (%v); driver.SchemaVersion() %d", v.SchemaVersion, len(files), err, driver.SchemaVersion())
	}
	return v
}

// versionText is chunks version's three lines for v.
func versionText(v version) string {
	revision := "no VCS revision recorded"
	if v.Revision != "" {
		revision = "revision " + v.Revision
		if v.Modified {
			revision += ", modified"
		}
	}
	return fmt.Sprintf("chunks %s (%s)\nbuilt with %s\ninstalls schema version %d\n", v.Version, revision, v.Go, v.SchemaVersion)
}

// wantVersion runs chunks version (text and JSON) and chunks --version of
// the binary at path and wants what its build info says.
func wantVersion(t *testing.T, path string, want version) {
	t.Helper()
	runBin := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(path, args...).Output()
		if err != nil {
			t.Fatalf("%s %s: %v", path, strings.Join(args, " "), err)
		}
		return string(out)
	}
	var got version
	js := runBin("version", "--json")
	if err := json.Unmarshal([]byte(js), &got); err != nil || got != want {
		t.Errorf("chunks version --json: %s (%v), want %+v", js, err, want)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if text := runBin(args...); text != versionText(want) {
			t.Errorf("chunks %s: %q, want %q", strings.Join(args, " "), text, versionText(want))
		}
	}
	if text := runBin("--json", "--version"); text != js {
		t.Errorf("chunks --json --version: %q, want %q", text, js)
	}
}

// TestVersion: chunks version and --version print what the binary's build
// info says (module version, VCS revision, modified, Go) and the schema
// version its migrate installs; for the binary under test, and for one
// built from a git repository with -buildvcs, clean and then modified.
func TestVersion(t *testing.T) {
	t.Parallel()
	wantVersion(t, bin, binaryVersion(t, bin))
	wantFailure(t, clitest.Run(t, "version", "extra"), 2, "usage: version takes no arguments")
	wantFailure(t, clitest.Run(t, "-v"), 2, "flag provided but not defined: -v")

	// The tree as it is, committed in a repository of its own, built with
	// the VCS stamped.
	repo := t.TempDir()
	root := filepath.Join("..", "..")
	files, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range strings.Fields(string(files)) {
		data, err := os.ReadFile(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(repo, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=chunks test", "-c", "user.email=test@chunks.invalid"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "the tree under test")
	head := git("rev-parse", "HEAD")
	build := func(name string) string {
		t.Helper()
		out := filepath.Join(t.TempDir(), name)
		cmd := exec.Command("go", "build", "-buildvcs=true", "-o", out, "./cmd/chunks")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, msg)
		}
		return out
	}
	clean := build("chunks-clean")
	want := binaryVersion(t, clean)
	if want.Revision != head || want.Modified {
		t.Fatalf("build info of a clean build: revision %q modified %v, want %s and false", want.Revision, want.Modified, head)
	}
	wantVersion(t, clean, want)

	if err := os.WriteFile(filepath.Join(repo, "cmd", "chunks", "modified.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	modified := build("chunks-modified")
	want = binaryVersion(t, modified)
	if want.Revision != head || !want.Modified {
		t.Fatalf("build info of a modified build: revision %q modified %v, want %s and true", want.Revision, want.Modified, head)
	}
	wantVersion(t, modified, want)
	// go build makes a pseudo-version of the revision: v0.0.0-TIME-REV+dirty.
	if text := versionText(want); !strings.HasPrefix(text, "chunks v0.0.0-") || !strings.Contains(text, "-"+head[:12]+"+dirty (revision "+head+", modified)\n") {
		t.Errorf("chunks version of a modified build: %q", text)
	}
}

// TestCompletionWords: what the bash and zsh scripts of chunks completion
// ask the binary (urfave/cli reads os.Args for it, so only a process can
// answer): the commands, and a command's flags.
func TestCompletionWords(t *testing.T) {
	t.Parallel()
	if out := wantOK(t, clitest.Run(t, "--generate-bash-completion")); !strings.HasPrefix(out, "migrate\ngrant\n") || !strings.Contains(out, "\nversion\ncompletion\n") {
		t.Errorf("chunks --generate-bash-completion: %q", out)
	}
	if out := wantOK(t, clitest.Run(t, "worker", "--c", "--generate-bash-completion")); out != "--concurrency\n--chunk-time\n--check-interval\n" {
		t.Errorf("chunks worker --c --generate-bash-completion: %q", out)
	}
}
