// Package pgtest gives tests a real PostgreSQL: $CHUNKS_TEST_DSN when set,
// otherwise a throwaway local cluster started once per test binary. Each test
// gets its own chunks schema, installed by the same code as chunks migrate,
// or one a test before it left exactly as that migrate made it (pool.go).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/internal/wire"
)

var (
	baseDSN string
	server  *localpg.Server
)

// Main runs the tests of a package against one database and stops the
// throwaway server afterwards, pass or fail. Call it from TestMain.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	baseDSN = os.Getenv("CHUNKS_TEST_DSN")
	if baseDSN == "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, err := localpg.Start(ctx, localpg.Options{})
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			return 1
		}
		server = s
		baseDSN = s.DSN()
	}
	if err := printServerVersion(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	code := m.Run()
	ReportSkipped()
	reportPool()
	if err := dropPool(baseDSN); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		code = max(code, 1)
	}
	if server != nil {
		if err := server.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: stop:", err)
			return 1
		}
	}
	return code
}

// DSN is the test database's connection string, with no search_path.
func DSN() string { return baseDSN }

// Server is the throwaway server, or nil when $CHUNKS_TEST_DSN is used.
func Server() *localpg.Server { return server }

// WithSearchPath returns dsn with the session's search_path set to schema.
func WithSearchPath(dsn, schema string) string {
	return dsn + " options='-c search_path=" + schema + "'"
}

// Connect opens a connection that the test closes at its end.
func Connect(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		if err := conn.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return conn
}

// NewSchemaName returns a fresh schema name for this test.
func NewSchemaName(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "t_" + hex.EncodeToString(b[:])
}

// Schema is a test's own migrated schema.
type Schema struct {
	Name string
	DSN  string    // the test database with search_path = Name
	Conn *pgx.Conn // a connection on DSN, closed when the test ends
}

// NewSchema gives the test a schema with chunks installed, exactly as a
// migrate leaves it, and takes it back when the test ends: it is reused
// when the test left nothing in it but rows and the functions of its
// changes, and dropped otherwise (pool.go).
func NewSchema(t testing.TB) *Schema {
	t.Helper()
	admin := Connect(t, baseDSN)
	p := takeSchema(t, admin)
	t.Cleanup(func() {
		if err := giveBack(context.Background(), admin, p); err != nil {
			t.Error(err)
		}
	})
	dsn := WithSearchPath(baseDSN, p.name)
	return &Schema{Name: p.name, DSN: dsn, Conn: Connect(t, dsn)}
}

// Exec runs sql on the schema's connection and fails the test on error.
func (s *Schema) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := s.Conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", strings.TrimSpace(sql), err)
	}
}

// UserSchema creates a schema of the user's own tables (not chunks') for
// one test, runs sql with %[1]s standing for its name, and drops it when
// the test ends. It returns the name.
func (s *Schema) UserSchema(t testing.TB, sql string) string {
	t.Helper()
	name := NewSchemaName(t)
	s.Exec(t, "create schema "+name)
	t.Cleanup(func() {
		if _, err := s.Conn.Exec(context.Background(), "drop schema "+name+" cascade"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	s.Exec(t, fmt.Sprintf(sql, name))
	// The writer of the chunks schema reads and writes the user's tables
	// (docs/roles.md "Code on your tables"): their owner grants it what the
	// changes, and the tables' own triggers, need.
	s.Exec(t, fmt.Sprintf(`do $g$ declare w text := (select quote_ident(role) from %s.change_writer); begin
	  execute format('grant usage on schema %%1$I to %%2$s; grant select, insert, update on all tables in schema %%1$I to %%2$s', %s, w);
	end $g$`, pgx.Identifier{s.Name}.Sanitize(), quoteLiteral(name)))
	return name
}

// quoteLiteral is text as an SQL string literal.
func quoteLiteral(text string) string { return "'" + strings.ReplaceAll(text, "'", "''") + "'" }

// CountingConnect opens a connection on dsn whose round trips on the wire
// can be counted ([wire.Counter]); the test closes it at its end.
func CountingConnect(t testing.TB, dsn string) (*pgx.Conn, *wire.Counter) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	counter := wire.Count(cfg)
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		if err := conn.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return conn, counter()
}

// Pool opens a pgx pool that the test closes at its end.
func Pool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// printServerVersion says on stderr which PostgreSQL the tests run against.
func printServerVersion() error {
	return WithConn(baseDSN, func(conn *pgx.Conn) error {
		var version string
		if err := conn.QueryRow(context.Background(), "show server_version").Scan(&version); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "pgtest: PostgreSQL %s\n", version)
		return nil
	})
}
