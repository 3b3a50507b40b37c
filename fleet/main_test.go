package fleet_test

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestMain stops the examples' throwaway server, if an example started it.
func TestMain(m *testing.M) { pgtest.ExampleMain(m) }

// exampleDSN is the examples' database, where a user has their own: a new
// one each time, with chunks installed in schema lab and the orders the
// examples name (see pgtest.ExampleShop); search_path is lab.
func exampleDSN() string { return pgtest.ExampleShop() }
