package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/urfave/cli/v2"
)

// update rewrites the generated files instead of comparing them:
// go generate ./cmd/chunks (go test -run 'TestGeneratedDocs' -update).
var update = flag.Bool("update", false, "rewrite docs/cli.md and docs/chunks.1 from the command definitions")

// generatedHeader opens docs/cli.md: the file is made, not written.
const generatedHeader = "<!-- Generated from the command definitions (cmd/chunks) by go generate ./cmd/chunks. DO NOT EDIT. -->\n\n"

// helpPage is one command's help, as chunks PATH --help prints it.
type helpPage struct {
	path  string // "chunks", "chunks campaign create"
	usage string
	help  string
}

// helpPages are the help of chunks and of every command and subcommand,
// in the order chunks help lists them (help itself left out). urfave/cli's
// ToMarkdown leaves each command's description (what it does, its
// examples) out: the help text is the source, so it is shown whole.
func helpPages(t *testing.T) []helpPage {
	t.Helper()
	app := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	var pages []helpPage
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden || c.Name == "help" {
				continue
			}
			p := append(slices.Clone(path), c.Name)
			pages = append(pages, helpPage{path: "chunks " + strings.Join(p, " "), usage: c.Usage})
			walk(p, c.Subcommands)
		}
	}
	pages = append(pages, helpPage{path: "chunks", usage: app.Usage})
	walk(nil, app.Commands)
	for i, p := range pages {
		args := append(strings.Fields(p.path), "--help")
		var out, errOut bytes.Buffer
		app := newApp(strings.NewReader(""), &out, &errOut)
		app.Version = "of the build: chunks version prints it" // the same whatever builds the docs
		if err := app.Run(args); err != nil || errOut.Len() != 0 {
			t.Fatalf("%s: %v %s", strings.Join(args, " "), err, errOut.String())
		}
		pages[i].help = strings.TrimRight(out.String(), "\n")
	}
	return pages
}

// generatedDocs are docs/cli.md and docs/chunks.1 as the command
// definitions make them now: every command's help, in Markdown, and that
// Markdown as a man page (go-md2man, as urfave/cli's ToMan does).
func generatedDocs(t *testing.T) map[string]string {
	t.Helper()
	pages := helpPages(t)
	var md, man strings.Builder
	md.WriteString(generatedHeader + "# The chunks command line\n\n" +
		"Every command's help, exactly as `chunks COMMAND --help` prints it. The global flags (`--dsn`, `--schema`,\n" +
		"`--json`) work before or after the command name. Exit status: 0 done, 1 runtime error, 2 invalid input or\n" +
		"usage, 3 conflict. `chunks version` says which schema version the binary installs; `chunks completion\n" +
		"bash|zsh|fish` prints a shell completion script; `man docs/chunks.1` shows this page as a man page.\n\n")
	for _, p := range pages[1:] {
		fmt.Fprintf(&md, "%s- [%s](#%s): %s\n", strings.Repeat("  ", strings.Count(p.path, " ")-1), p.path, strings.ReplaceAll(p.path, " ", "-"), p.usage)
	}
	man.WriteString("% chunks 1\n\n# NAME\n\nchunks - " + pages[0].usage + "\n\n# DESCRIPTION\n\n" +
		"Every command's help, exactly as **chunks COMMAND --help** prints it.\n\n# COMMANDS\n")
	for _, p := range pages {
		section := fmt.Sprintf("\n## %s\n\n```text\n%s\n```\n", p.path, p.help)
		md.WriteString(section)
		man.WriteString(section)
	}
	return map[string]string{"cli.md": md.String(), "chunks.1": string(md2man.Render([]byte(man.String())))}
}

// TestGeneratedDocs fails when docs/cli.md or docs/chunks.1 is not what
// the command definitions make, naming the command that refreshes them.
func TestGeneratedDocs(t *testing.T) {
	for name, want := range generatedDocs(t) {
		path := filepath.Join("..", "..", "docs", name)
		if *update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v: make it with go generate ./cmd/chunks", err)
		}
		if string(got) != want {
			t.Errorf("docs/%s is stale: the command definitions changed; refresh it with go generate ./cmd/chunks\n(first difference at line %d)", name, firstDifference(string(got), want))
		}
	}
}

// firstDifference is the number of the first line where a and b differ.
func firstDifference(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

// TestCompletionScripts checks that the embedded bash and zsh scripts are
// urfave/cli's, byte for byte (the version go.mod requires), and that
// chunks completion prints them naming chunks, and fish's from the
// command definitions.
func TestCompletionScripts(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/urfave/cli/v2").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "autocomplete")
	for _, name := range []string{"bash_autocomplete", "zsh_autocomplete"} {
		upstream, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		ours, err := os.ReadFile(filepath.Join("completion", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(upstream, ours) {
			t.Errorf("cmd/chunks/completion/%s is stale: not urfave/cli's; refresh it with cp %s cmd/chunks/completion/", name, filepath.Join(dir, name))
		}
	}
	r := chunksIn(t, nil, "", "completion", "bash")
	if r.Code != 0 || !strings.Contains(r.Stdout, "\nPROG=chunks\n") || !strings.Contains(r.Stdout, "--generate-bash-completion") ||
		!strings.HasSuffix(r.Stdout, "complete -o bashdefault -o default -o nospace -F _cli_bash_autocomplete $PROG\nunset PROG\n") {
		t.Errorf("completion bash: %v", r)
	}
	r = chunksIn(t, nil, "", "completion", "zsh")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "#compdef chunks\n") || !strings.HasSuffix(r.Stdout, "compdef _cli_zsh_autocomplete chunks\n") || strings.Contains(r.Stdout, "$PROG") {
		t.Errorf("completion zsh: %v", r)
	}
	r = chunksIn(t, nil, "", "completion", "fish")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "# chunks fish shell completion\n") ||
		!strings.Contains(r.Stdout, "complete -c chunks -n '__fish_seen_subcommand_from worker' -f -l concurrency -r -d 'run `N` passes at once, 1 to 64'\n") {
		t.Errorf("completion fish: %v", r)
	}
	wantExit(t, chunksIn(t, nil, "", "completion", "ksh"), 2, "usage: SHELL: must be one of bash, zsh, fish, got \"ksh\"")
	wantExit(t, chunksIn(t, nil, "", "completion"), 2, "usage: completion needs SHELL")

}
