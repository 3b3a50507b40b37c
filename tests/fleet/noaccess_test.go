package fleet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// chunks serve as a role that was never granted access: /readyz says 503
// that the role lacks a grant (the log names it: 42501 and the command),
// not that chunks is not installed, and so does the start-up warning.
func TestServeWithoutGrantSaysWhichGrant(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	nobody := pgtest.NewRole(t, pgtest.DSN(), "nogrant")
	p := clitest.Start(t, clitest.Options{Name: "serve without a grant"}, "--dsn", nobody.DSN(pgtest.DSN()), "--schema", l.Name, "serve", "--http", "127.0.0.1:0")
	base := servedURL(t, p)
	grant := fmt.Sprintf("chunks grant --schema %s --viewer %s", l.Name, nobody.Name)
	p.WaitLine(t, 0, 10*time.Second, "level=WARN", "cannot show the fleet yet", "SQLSTATE 42501", grant)
	// The page names the missing grant, but not the role or the schema:
	// nobody logs in to read it (those are in the log, above).
	r := fetch(t, "GET", base+"readyz")
	want := "not ready: this role has no chunks access: the schema's owner grants it with chunks grant (details in the chunks log)"
	if r.code != 503 || strings.TrimSpace(r.body) != want || strings.Contains(r.body, nobody.Name) {
		t.Errorf("GET /readyz without a grant: %d %q, want 503 %q", r.code, r.body, want)
	}
}

// A worker whose access is revoked while it runs logs, at error level, the
// grant that is missing, not that chunks is not installed.
func TestWorkerAccessRevokedSaysWhichGrant(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	w := l.worker(t, "w1", "--poll", "100ms")
	from := w.LineCount() // before the revoke: the next pass may fail before Grant returns here
	if _, err := driver.Revoke(ctx, l.Conn, l.operator.Name, driver.Viewer); err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"pass failed", "heartbeat failed"} {
		i := w.WaitLine(t, from, 20*time.Second, "level=ERROR", msg, "SQLSTATE 42501",
			fmt.Sprintf("chunks grant --schema %s --operator %s", l.Name, l.operator.Name))
		if line := w.Lines()[i]; strings.Contains(line, "migrate") {
			t.Errorf("the worker says to migrate: %s", line)
		}
	}
	if _, err := driver.Grant(ctx, l.Conn, l.operator.Name, driver.Operator); err != nil {
		t.Fatal(err)
	}
	stopWorkers(t, w)
}
