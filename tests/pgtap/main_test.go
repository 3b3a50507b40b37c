// Package pgtap checks the chunks SQL functions from a psql user's point of
// view, with the tools a PostgreSQL developer already knows: pgTAP test files
// run by pg_prove (TestPgTAP, files under sql/) and plpgsql_check's static
// analysis of every PL/pgSQL function (TestPlpgsqlCheck).
//
// Each test gets a fresh migrated schema from [pgtest.NewSchema]. The two
// extensions live in their own schemas (chunks_test_tap, chunks_test_check),
// never in public or in the chunks schema.
//
// Debian packages needed on the machine that runs the tests and on the
// database server: postgresql-15-pgtap, libtap-parser-sourcehandler-pgtap-perl
// (pg_prove) and postgresql-15-plpgsql-check (15 being the server's major
// version).
package pgtap

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
