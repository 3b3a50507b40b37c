package fleet

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	fleetapi "github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// The database's schema version against the binary's, faked as the upgrade
// tests fake an old install (schema_version lowered, or raised as a newer
// binary would leave it): chunks status (text and JSON) and /readyz say
// which is newer; a worker refuses an older schema (exit 1, one line
// naming both versions and chunks migrate) and runs on a newer one with a
// warning (README's decisions: a rolling upgrade migrates first).
func TestSchemaVersionMismatch(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	newJobs(t, l, "a", 4, 2)
	binary := driver.SchemaVersion()
	older := fmt.Sprintf("the database's chunks schema is version %d, older than this binary's %d: run chunks migrate (with this binary)", binary-1, binary)
	newer := fmt.Sprintf("the database's chunks schema is version %d, newer than this binary's %d: a newer chunks migrated it; upgrade this binary", binary+1, binary)
	status := func(t *testing.T) (string, fleetapi.SchemaVersions) {
		t.Helper()
		r := l.Chunks(t, "status")
		if r.Code != 0 {
			t.Fatalf("status: %v", r)
		}
		j := l.Chunks(t, "status", "--json")
		var got struct {
			Schema fleetapi.SchemaVersions `json:"schema_version"`
		}
		if j.Code != 0 || json.Unmarshal([]byte(j.Stdout), &got) != nil {
			t.Fatalf("status --json: %v", j)
		}
		return r.Stdout, got.Schema
	}
	serve := clitest.Start(t, clitest.Options{Name: "serve"}, append(l.Globals(), "serve", "--http", "127.0.0.1:0")...)
	base := servedURL(t, serve)
	readyz := func(t *testing.T, code int, body string) {
		t.Helper()
		if r := fetch(t, "GET", base+"readyz"); r.code != code || r.body != body {
			t.Errorf("GET /readyz: %d %q, want %d %q", r.code, r.body, code, body)
		}
	}

	t.Run("same", func(t *testing.T) {
		text, v := status(t)
		if strings.Contains(text, "warning") || dbVersion(v) != binary || v.Binary != binary || v.Compare != "same" {
			t.Errorf("status: %q %+v", text, v)
		}
		readyz(t, 200, "ready\n")
	})

	t.Run("older", func(t *testing.T) {
		l.Exec(t, "update schema_version set version = $1", binary-1)
		defer l.Exec(t, "update schema_version set version = $1", binary)
		text, v := status(t)
		if !strings.HasPrefix(text, "warning: "+older+"\n") || dbVersion(v) != binary-1 || v.Binary != binary || v.Compare != "older" {
			t.Errorf("status: %q %+v", text, v)
		}
		readyz(t, 503, "not ready: "+older+"\n")
		w := l.startWorker(t, "old")
		r := w.WaitWithin(t, 20*time.Second)
		lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
		if r.Code != 1 || lines[len(lines)-1] != "chunks: worker old cannot start: "+older ||
			!strings.Contains(r.Stderr, `level=ERROR msg="refusing to start: `+older+`"`) || strings.Contains(r.Stderr, "msg=ready") {
			t.Errorf("worker on an older schema: want exit 1 and %q, got %v", older, r)
		}
		if n := l.nextIndex(t, "a"); n != 0 {
			t.Errorf("the refused worker ran a chunk: next_index %d", n)
		}
	})

	t.Run("no installed_version()", func(t *testing.T) {
		// An install from before installed_version(): older than every
		// binary that asks.
		l.Exec(t, "alter function installed_version() rename to installed_version_aside")
		defer l.Exec(t, "alter function installed_version_aside() rename to installed_version")
		text, v := status(t)
		want := fmt.Sprintf("warning: the database's chunks schema has no installed_version(), older than this binary's %d: run chunks migrate (with this binary)\n", binary)
		if !strings.HasPrefix(text, want) || v.Database != nil || v.Compare != "older" {
			t.Errorf("status: %q %+v, want %q", text, v, want)
		}
	})

	t.Run("newer", func(t *testing.T) {
		l.Exec(t, "update schema_version set version = $1", binary+1)
		defer l.Exec(t, "update schema_version set version = $1", binary)
		text, v := status(t)
		if !strings.HasPrefix(text, "warning: "+newer+"\n") || dbVersion(v) != binary+1 || v.Compare != "newer" {
			t.Errorf("status: %q %+v", text, v)
		}
		readyz(t, 200, "ready\nwarning: "+newer+"\n")
		w := l.startWorker(t, "new", "--http", "127.0.0.1:0")
		w.WaitLine(t, 0, 20*time.Second, "level=WARN", `msg="running on a newer schema: `+newer+`"`)
		w.WaitLine(t, 0, 20*time.Second, "msg=ready")
		if r := fetch(t, "GET", servedURL(t, w)+"readyz"); r.code != 200 || r.body != "ready\nwarning: "+newer+"\n" {
			t.Errorf("the worker's /readyz: %d %q", r.code, r.body)
		}
		pgtest.WaitFor(t, 20*time.Second, "job a done", func() bool { return l.status(t)["a"].State == "done" })
		stopWorkers(t, w)
	})
	serve.Signal(t, syscall.SIGTERM)
	if r := serve.WaitWithin(t, 20*time.Second); r.Code != 0 {
		t.Fatalf("serve: %v", r)
	}
}

// dbVersion is the database's version in v, -1 when it has none.
func dbVersion(v fleetapi.SchemaVersions) int {
	if v.Database == nil {
		return -1
	}
	return *v.Database
}
