package shards

import (
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/internal/pgtest"
)

// chunks serve on a router: its JSON lists every shard's jobs (the routed
// status_page), while a job's report page, which names no tenant, is
// refused there (the README says to use chunks report --tenant), and
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
	cmd := exec.Command(bin, "serve", "--http", addr, "--dsn", routerServer.DSN(), "--schema", c.schema)
	cmd.Env = pgtest.CleanEnv()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cmd.Process.Kill(); err != nil {
			t.Error(err)
		}
		_ = cmd.Wait() // killed: its exit status says so
	})
	get := func(path string) (int, string, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }() // read to the end below
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	waitFor(t, 30*time.Second, "chunks serve listening", func() (bool, error) {
		code, _, err := get("/healthz")
		return code == http.StatusOK, err
	})
	code, body, err := get("/api/status")
	if err != nil || code != http.StatusOK || !contains(body, `"acme-1"`, `"initech-1"`) {
		t.Fatalf("GET /api/status through the router: %d, %v\n%s\n%s", code, err, body, out.String())
	}
	if code, body, err := get("/readyz"); err != nil || code != http.StatusServiceUnavailable { // as the README says
		t.Errorf("GET /readyz through the router: %d, %v; want 503 (no job_progress on a router)\n%s", code, err, body)
	}
	code, body, err = get("/jobs/acme-1")
	if err != nil || code == http.StatusOK {
		t.Fatalf("GET /jobs/acme-1 through the router: %d, %v; want a refusal\n%s", code, err, body)
	}
}
