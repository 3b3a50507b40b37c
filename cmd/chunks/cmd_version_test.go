package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	chunkssql "github.com/chunks-dev/chunks/sql"
)

// chunks version in process: the test binary's own build info, the Go
// version and the schema version; --version prints the same, --json too.
func TestVersionInProcess(t *testing.T) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build info")
	}
	want := buildVersion{Version: info.Main.Version, Go: runtime.Version(), SchemaVersion: driver.SchemaVersion()}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	want.Revision, want.Modified = settings["vcs.revision"], settings["vcs.modified"] == "true"
	if files, err := fs.Glob(chunkssql.Migrations(), "*.sql"); err != nil || len(files) != want.SchemaVersion {
		t.Fatalf("driver.SchemaVersion() = %d, but there are %d migrations (%v)", want.SchemaVersion, len(files), err)
	}
	js := wantRun(t, runVersion, deps{json: true}, &noArgs{})
	var got buildVersion
	if err := json.Unmarshal([]byte(js), &got); err != nil || got != want {
		t.Fatalf("version --json: %s (%v), want %+v", js, err, want)
	}
	text := wantRun(t, runVersion, deps{}, &noArgs{})
	if want.Revision == "" && text != "chunks "+want.Version+" (no VCS revision recorded)\nbuilt with "+want.Go+"\ninstalls schema version "+fmt.Sprint(want.SchemaVersion)+"\n" {
		t.Fatalf("version: %q", text)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if r := chunksIn(t, nil, "", args...); r.Code != 0 || r.Stdout != text || r.Stderr != "" {
			t.Errorf("%v: %v, want %q", args, r, text)
		}
	}
	if r := chunksIn(t, nil, "", "--json", "--version"); r.Code != 0 || r.Stdout != js {
		t.Errorf("--json --version: %v, want %q", r, js)
	}
}
