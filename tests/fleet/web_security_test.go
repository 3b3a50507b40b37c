package fleet

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// webPaths are the status server's paths, with a report of job a.
var webPaths = []string{"", "api/status", "jobs/a", "api/jobs/a/report", "metrics", "healthz", "readyz", "static/page.js"}

// portOf is the port of a served URL (http://host:port/).
func portOf(url string) string {
	return strings.TrimSuffix(url[strings.LastIndex(url, ":")+1:], "/")
}

// serveJobs registers jobs (names) of 4 targets in a new lab and serves
// it on 127.0.0.1; it returns the process and where it serves.
func serveJobs(t testing.TB, names string) (*clitest.Proc, string) {
	t.Helper()
	l := newLab(t)
	newJobs(t, l, names, 4, 2)
	p := clitest.Start(t, clitest.Options{Name: "serve"}, append(l.Globals(), "serve", "--http", "127.0.0.1:0")...)
	return p, servedURL(t, p)
}

// stopServe stops a chunks serve with SIGTERM and returns its whole stderr.
func stopServe(t testing.TB, p *clitest.Proc) string {
	t.Helper()
	p.Signal(t, syscall.SIGTERM)
	r := p.WaitWithin(t, 20*time.Second)
	if r.Code != 0 {
		t.Fatalf("serve after SIGTERM: %v", r)
	}
	return r.Stderr
}

// chunks serve bound to loopback answers only a Host that names loopback
// (localhost, 127.0.0.0/8, [::1], with or without a port): any other Host
// is 421 on every path, /metrics and /healthz included, so a web page
// whose name rebinds to 127.0.0.1 (DNS rebinding) reads nothing.
func TestServeAnswersOnlyLoopbackHosts(t *testing.T) {
	t.Parallel()
	p, base := serveJobs(t, "a")
	port := portOf(base)
	for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.1.nip.io:" + port,
		"localhost.evil.example:" + port, "0.0.0.0:" + port, "10.1.2.3:" + port, "[fe80::1]:" + port} {
		for _, path := range webPaths {
			r := fetchAs(t, http.MethodGet, base+path, host)
			if r.code != http.StatusMisdirectedRequest || !strings.Contains(r.body, "Host") ||
				!strings.Contains(r.header.Get("Content-Security-Policy"), "default-src 'none'") {
				t.Errorf("GET /%s with Host %s: %d (%d bytes), want 421", path, host, r.code, len(r.body))
			}
			if strings.Contains(r.body, `"jobs"`) || strings.Contains(r.body, "chunks_") {
				t.Errorf("GET /%s with Host %s shows the fleet:\n%s", path, host, r.body)
			}
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "127.0.0.1", "localhost:" + port, "localhost",
		"LocalHost:" + port, "127.9.9.9:" + port, "[::1]:" + port, "[::1]"} {
		for _, path := range webPaths {
			if r := fetchAs(t, http.MethodGet, base+path, host); r.code != http.StatusOK {
				t.Errorf("GET /%s with Host %s: %d %q, want 200", path, host, r.code, r.body)
			}
		}
	}
	stopServe(t, p)
}

// The answers of the status server never show the database's error text
// (which names the user, the database, the host and the port): a fixed
// reason, and the details in the log at level ERROR.
func TestServeHidesDatabaseErrors(t *testing.T) {
	t.Parallel()
	secret := "nodb_" + pgtest.NewSchemaName(t)
	p := clitest.Start(t, clitest.Options{Name: "serve"}, "--dsn", pgtest.DSN()+" dbname="+secret, "--schema", "lab", "serve", "--http", "127.0.0.1:0")
	base := servedURL(t, p)
	cfg, err := pgconn.ParseConfig(pgtest.DSN())
	if err != nil {
		t.Fatal(err)
	}
	const why = "database unavailable (details in the chunks log)\n"
	for path, body := range map[string]string{
		"readyz":            "not ready: " + why,
		"":                  "could not read the fleet: " + why,
		"api/status":        "could not read the fleet: " + why,
		"jobs/a":            "no report: " + why,
		"api/jobs/a/report": "no report: " + why,
	} {
		r := fetch(t, http.MethodGet, base+path)
		if r.code != http.StatusServiceUnavailable || r.body != body {
			t.Errorf("GET /%s without a database: %d %q, want 503 %q", path, r.code, r.body, body)
		}
		for _, leak := range []string{secret, cfg.User, cfg.Host, fmt.Sprint(cfg.Port), "user=", "SQLSTATE"} {
			if strings.Contains(r.body, leak) {
				t.Errorf("GET /%s shows %q: %q", path, leak, r.body)
			}
		}
	}
	if got := sample(t, metrics(t, base+"metrics"), "chunks_database_up"); got != 0 {
		t.Errorf("chunks_database_up %v without a database", got)
	}
	stderr := stopServe(t, p)
	for _, path := range []string{"not ready", "could not read the fleet", "no report"} {
		if !clitest.ContainsAll(stderr, "level=ERROR", "web: "+path, secret) {
			t.Errorf("no ERROR line for %q naming the database:\n%s", path, stderr)
		}
	}
}

// A bad ?after= (not a job id: a NUL, invalid UTF-8, a space, too long) is
// the client's mistake: 400 naming the parameter, before any query, and
// nothing logged at level ERROR.
func TestServeRefusesBadAfter(t *testing.T) {
	t.Parallel()
	p, base := serveJobs(t, "a b")
	for _, after := range []string{"%00", "a%00b", "%ff", "a%c3", "a%20b", "%E2%80%AEa", strings.Repeat("a", 65)} {
		for _, path := range []string{"", "api/status"} {
			r := fetch(t, http.MethodGet, base+path+"?after="+after)
			if r.code != http.StatusBadRequest || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") ||
				!strings.HasPrefix(r.body, "could not read the fleet: after: must be a job id (1 to 64 ASCII letters, digits, _ or -), got ") {
				t.Errorf("GET /%s?after=%s: %d %q, want 400 naming after", path, after, r.code, r.body)
			}
		}
	}
	for _, after := range []string{"", "a", "zzz"} {
		if r := fetch(t, http.MethodGet, base+"api/status?after="+after); r.code != http.StatusOK {
			t.Errorf("GET /api/status?after=%s: %d %q", after, r.code, r.body)
		}
	}
	if stderr := stopServe(t, p); strings.Contains(stderr, "level=ERROR") {
		t.Errorf("a bad ?after= logged an error:\n%s", stderr)
	}
}
