package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
)

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:      "version",
		Usage:     "print this binary's version, VCS revision, Go version and the schema version it installs",
		UsageText: "chunks version [--json]",
		Description: "The module version and the VCS revision (with \"modified\" when the tree had uncommitted\n" +
			"changes) come from the build info that go build records; the schema version is the last\n" +
			"migration this binary's chunks migrate applies (SCHEMA.schema_version after it). chunks status\n" +
			"and /readyz say when a database's schema version differs from it. chunks --version prints the\n" +
			"same. It needs no database.\n\n" +
			"Example:\n  chunks version\n  chunks version --json | jq .schema_version",
		Action: action(parseNoArgs, runVersion),
	}
}

// buildVersion is what chunks version prints.
type buildVersion struct {
	Version       string `json:"version"`  // the module version: v1.2.3, a pseudo-version, or (devel)
	Revision      string `json:"revision"` // the VCS revision; "" when go build recorded none
	Modified      bool   `json:"modified"` // the tree had uncommitted changes
	Go            string `json:"go"`       // the Go version that built it
	SchemaVersion int    `json:"schema_version"`
}

// readBuildVersion is this binary's buildVersion.
func readBuildVersion() buildVersion {
	v := buildVersion{Version: "(unknown)", Go: runtime.Version(), SchemaVersion: driver.SchemaVersion()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Version = info.Main.Version
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// runVersion prints the binary's version.
func runVersion(_ context.Context, d deps, _ *noArgs, out io.Writer) error {
	return printVersion(out, d.json)
}

// printVersion prints the binary's version, as JSON or as three lines.
func printVersion(out io.Writer, asJSON bool) error {
	v := readBuildVersion()
	if asJSON {
		return printJSON(out, v)
	}
	revision := "no VCS revision recorded"
	if v.Revision != "" {
		revision = "revision " + v.Revision
		if v.Modified {
			revision += ", modified"
		}
	}
	say(out, "chunks %s (%s)", v.Version, revision)
	say(out, "built with %s", v.Go)
	say(out, "installs schema version %d", v.SchemaVersion)
	return nil
}

// init makes chunks --version print what chunks version prints (also
// --json): urfave/cli's flag, without its -v alias.
func init() {
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version (as chunks version does)", DisableDefaultText: true}
	cli.VersionPrinter = func(c *cli.Context) {
		out := &resultWriter{w: c.App.Writer}
		if err := printVersion(out, c.Bool("json")); err != nil {
			fmt.Fprintln(c.App.ErrWriter, "chunks:", err)
		}
	}
}
