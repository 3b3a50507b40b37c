package clitest

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Lab is a test's own migrated schema and the connection string that its
// chunks processes log in with.
type Lab struct {
	*pgtest.Schema
	// ChunksDSN is what the chunks processes get as --dsn: the test
	// database's superuser ([pgtest.DSN]) for [NewLab]; a test that runs
	// them as another role sets that role's DSN ([pgtest.Role.DSN]).
	ChunksDSN string
}

// NewLab is a fresh schema of the test database ([pgtest.NewSchema]),
// dropped when the test ends, that chunks reaches as the superuser.
func NewLab(t testing.TB) *Lab {
	t.Helper()
	return &Lab{Schema: pgtest.NewSchema(t), ChunksDSN: pgtest.DSN()}
}

// Globals are the global flags that point chunks at the lab.
func (l *Lab) Globals() []string {
	return []string{"--dsn", l.ChunksDSN, "--schema", l.Name}
}

// Chunks runs "chunks --dsn D --schema S args..." to its end.
func (l *Lab) Chunks(t testing.TB, args ...string) Result {
	t.Helper()
	return Run(t, append(l.Globals(), args...)...)
}

// Start starts "chunks --dsn D --schema S args...".
func (l *Lab) Start(t testing.TB, o Options, args ...string) *Proc {
	t.Helper()
	return Start(t, o, append(l.Globals(), args...)...)
}
