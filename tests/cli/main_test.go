// Package cli tests the built chunks binary as a user meets it: separate
// processes, their exit status (or the signal that killed them), stdout and
// stderr, and the rows they leave in a real PostgreSQL.
package cli

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// bin is the path of the chunks binary under test.
var bin = pgtest.Binary()

func TestMain(m *testing.M) { pgtest.MainWithBinary(m) }
