package router_test

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestMain stops the examples' throwaway server, if one started. ExampleInstall
// needs PL/Proxy on it: without, it is skipped with a line saying so, and
// under CI=true the test binary fails instead.
func TestMain(m *testing.M) {
	pgtest.ExampleMainNeeding(m, "plproxy", "postgresql-%d-plproxy", "ExampleInstall")
}

// exampleDSNs are the examples' databases, as a user has theirs: a new,
// empty database for the router (the DSN has search_path=lab), and n new
// databases as its shards, each with chunks installed in schema lab (their
// DSNs without search_path: the router's server connects with them).
func exampleDSNs(n int) (routerDSN string, shards []string) {
	for range n {
		shards = append(shards, pgtest.ExampleChunks("lab"))
	}
	return pgtest.WithSearchPath(pgtest.ExampleDatabase(), "lab"), shards
}
