package shards

import (
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// chunks serve on a router: its JSON lists every shard's jobs (the routed
// status_page), while a job's report page, which names no tenant, is
// refused there (docs/beyond-one-server.md says to use chunks report --tenant), and
// /readyz says 503 (it looks for a shard's table).
func TestServeThroughRouter(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers[:2])
	list := []job{{tenant: "acme", id: "acme-1", orders: []int64{1}}, {tenant: "initech", id: "initech-1", orders: []int64{2}}}
	c.place(t, list, 1)
	if c.shardOf(t, "acme") == c.shardOf(t, "initech") {
		t.Fatal("acme and initech share a shard; the test wants two")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	p := clitest.Start(t, clitest.Options{}, "serve", "--http", addr, "--dsn", routerServer.DSN(), "--schema", c.schema) // killed when the test ends
	get := func(path string) (int, string, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }() // read to the end below
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	pgtest.WaitFor(t, 30*time.Second, "chunks serve listening", untilOK(t, func() (bool, error) {
		code, _, err := get("/healthz")
		return code == http.StatusOK, err
	}))
	code, body, err := get("/api/status")
	if err != nil || code != http.StatusOK || !clitest.ContainsAll(body, `"acme-1"`, `"initech-1"`) {
		t.Fatalf("GET /api/status through the router: %d, %v\n%s\n%s", code, err, body, strings.Join(p.Lines(), "\n"))
	}
	if code, body, err := get("/readyz"); err != nil || code != http.StatusServiceUnavailable { // as docs/beyond-one-server.md says
		t.Errorf("GET /readyz through the router: %d, %v; want 503 (no job_progress on a router)\n%s", code, err, body)
	}
	code, body, err = get("/jobs/acme-1")
	if err != nil || code == http.StatusOK {
		t.Fatalf("GET /jobs/acme-1 through the router: %d, %v; want a refusal\n%s", code, err, body)
	}
}
