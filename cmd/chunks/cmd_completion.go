package main

import (
	"context"
	_ "embed"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

// The bash and zsh scripts are urfave/cli's own (its autocomplete folder,
// which is not a Go package): they ask chunks --generate-bash-completion
// for the words. TestCompletionScripts checks them against the module's.
var (
	//go:embed completion/bash_autocomplete
	bashCompletion string
	//go:embed completion/zsh_autocomplete
	zshCompletion string
)

// completionShells are the shells chunks completion writes a script for.
var completionShells = []string{"bash", "zsh", "fish"}

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		UsageText: "chunks completion SHELL",
		Description: "SHELL is bash, zsh or fish. The bash and zsh scripts are urfave/cli's: they complete\n" +
			"commands and flags by asking chunks --generate-bash-completion; the fish one is generated from\n" +
			"the command definitions. It needs no database.\n" +
			"The bash script calls the bash-completion package's functions on every Tab: install it first\n" +
			"(Debian, Ubuntu: apt-get install bash-completion), or Tab says \"_get_comp_words_by_ref: command\n" +
			"not found\". Sourcing the script works either way.\n\n" +
			"Example:\n  source <(chunks completion bash)       # in ~/.bashrc\n" +
			"  chunks completion zsh > _chunks         # into a directory of $fpath\n" +
			"  chunks completion fish > chunks.fish    # into ~/.config/fish/completions/",
		Action: action(parseCompletion, runCompletion),
	}
}

// completionOptions is chunks completion SHELL.
type completionOptions struct {
	Shell string
	app   *cli.App // the command line to complete, for fish
}

func parseCompletion(c *cli.Context) (*completionOptions, error) {
	shell, err := oneArg(c, param{name: "SHELL", what: "the shell"})
	return &completionOptions{Shell: shell, app: c.App}, err
}

// Validate refuses a shell without a script.
func (o *completionOptions) Validate() error {
	if !slices.Contains(completionShells, o.Shell) {
		return usagef("SHELL: must be one of %s, got %s", strings.Join(completionShells, ", "), driver.Excerpt(o.Shell, true))
	}
	return nil
}

// runCompletion prints the script of the shell.
func runCompletion(_ context.Context, _ deps, o *completionOptions, out io.Writer) error {
	script, err := completionScript(o.app, o.Shell)
	if err != nil {
		return err
	}
	_, err = io.WriteString(out, script)
	return err
}

// completionScript is the completion script of app for shell (one of
// completionShells).
func completionScript(app *cli.App, shell string) (string, error) {
	switch shell {
	case "bash":
		// Sourced from a pipe, the script would name the program after
		// its file (63, for /dev/fd/63): name it.
		shebang, rest, _ := strings.Cut(bashCompletion, "\n")
		return shebang + "\nPROG=chunks\n" + rest, nil
	case "zsh":
		return strings.ReplaceAll(zshCompletion, "$PROG", "chunks"), nil
	}
	return app.ToFishCompletion()
}
