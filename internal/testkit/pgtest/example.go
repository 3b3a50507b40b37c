package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/localpg"
)

// examples is the server of a package's runnable examples: $CHUNKS_TEST_DSN,
// or a throwaway server started the first time an example asks for a
// database (so `go test -run TestX` starts none), and the databases made
// on it.
var examples struct {
	once      sync.Once
	err       error
	base      string // the server's DSN, database postgres
	server    *localpg.Server
	mu        sync.Mutex
	databases []string
}

// ExampleMain runs the tests and examples of a package whose examples get
// their databases from [ExampleDatabase] or [ExampleShop], then drops those
// databases and stops the server, if one was started. Call it from the
// TestMain of the package's external test package.
func ExampleMain(m *testing.M) {
	code := m.Run()
	ReportSkipped()
	if err := stopExamples(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: examples:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// stopExamples drops the examples' databases (on $CHUNKS_TEST_DSN's
// server; a throwaway server goes as a whole) and stops the server.
func stopExamples() error {
	examples.mu.Lock()
	defer examples.mu.Unlock()
	if examples.server != nil {
		return examples.server.Stop()
	}
	if len(examples.databases) == 0 {
		return nil
	}
	return WithConn(examples.base, func(conn *pgx.Conn) error {
		var errs []error
		for _, db := range examples.databases {
			_, err := conn.Exec(context.Background(), "drop database if exists "+pgx.Identifier{db}.Sanitize()+" with (force)")
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
}

// startExamples connects the examples to $CHUNKS_TEST_DSN or starts their
// throwaway server, once.
func startExamples() error {
	examples.once.Do(func() {
		if examples.base = os.Getenv("CHUNKS_TEST_DSN"); examples.base != "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := localpg.Start(ctx, localpg.Options{})
		if err != nil {
			examples.err = fmt.Errorf("start a server for the examples: %w", err)
			return
		}
		examples.mu.Lock()
		examples.server, examples.base = s, s.DSN()
		examples.mu.Unlock()
	})
	return examples.err
}

// ExampleDatabase creates a new, empty database on the examples' server
// and returns a superuser's DSN of it (keyword/value, so more keywords can
// be appended). An example cannot fail before its output is compared, so on
// any error this ends the test binary with status 1, after stopping the
// server: a missing PostgreSQL fails, on a developer's machine as in CI.
func ExampleDatabase() string {
	dsn, err := exampleDatabase()
	if err != nil {
		exampleFatal(err)
	}
	return dsn
}

func exampleDatabase() (string, error) {
	if err := startExamples(); err != nil {
		return "", err
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	name := "example_" + hex.EncodeToString(b[:])
	if err := WithConn(examples.base, func(conn *pgx.Conn) error {
		_, err := conn.Exec(context.Background(), "create database "+name)
		return err
	}); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	examples.mu.Lock()
	examples.databases = append(examples.databases, name)
	examples.mu.Unlock()
	return examples.base + " dbname=" + name, nil
}

// ExampleShopSchema is the schema [ExampleShop] installs chunks into.
const ExampleShopSchema = "lab"

// exampleShopSQL is the shop [ExampleShop] makes: the orders of tenant
// alien-desert, and a table of the shop's own (docs/your-own-tables.md).
const exampleShopSQL = `
insert into lab.orders (id, tenant, qty, state, revision) values
  (1001, 'alien-desert', 2, 'pending', 0),
  (1002, 'alien-desert', 1, 'pending', 4),
  (1003, 'alien-desert', 5, 'pending', 1);
create schema shop;
create table shop.payments(payment_id bigint primary key, merchant_id integer not null,
  status text not null, amount_cents integer not null, hold_reason text,
  lock_version integer not null default 0);
insert into shop.payments values
  (5, 42, 'captured', 300, null, 0),
  (7, 42, 'captured', 1200, null, 3);
grant usage on schema shop to lab_writer;
grant select, update on shop.payments to lab_writer;
`

// ExampleChunks is a new database (see [ExampleDatabase]) with chunks
// installed in schema by [driver.Migrate]; its DSN has no search_path.
func ExampleChunks(schema string) string {
	dsn := ExampleDatabase()
	if err := WithConn(dsn, func(conn *pgx.Conn) error {
		return driver.Migrate(context.Background(), conn, schema, driver.MigrateOptions{})
	}); err != nil {
		exampleFatal(fmt.Errorf("install chunks for the examples: %w", err))
	}
	return dsn
}

// ExampleShop is [ExampleChunks] in schema lab with the pending orders
// 1001 (qty 2, revision 0), 1002 (qty 1, revision 4) and 1003 (qty 5,
// revision 1) of tenant alien-desert in lab.orders, and the shop's own
// table shop.payments with the captured payments 5 (merchant 42, 300
// cents, lock_version 0) and 7 (merchant 42, 1200 cents, lock_version 3).
// It returns a DSN of it with search_path=lab, as a user's DSN puts
// chunks' schema on the search_path.
func ExampleShop() string {
	dsn := ExampleChunks(ExampleShopSchema)
	if err := WithConn(dsn, func(conn *pgx.Conn) error {
		_, err := conn.Exec(context.Background(), exampleShopSQL)
		return err
	}); err != nil {
		exampleFatal(fmt.Errorf("the examples' shop: %w", err))
	}
	return WithSearchPath(dsn, ExampleShopSchema)
}

// exampleFatal ends the test binary after an error of the examples'
// set-up, stopping their server first.
func exampleFatal(err error) {
	fmt.Fprintln(os.Stderr, "pgtest: examples:", err)
	if serr := stopExamples(); serr != nil {
		fmt.Fprintln(os.Stderr, "pgtest: examples:", serr)
	}
	os.Exit(1)
}

// ExampleMainNeeding is [ExampleMain] for a package whose examples named
// in examples need the PostgreSQL extension ext, an optional tool that the
// Debian package debPackage (a format with the server's major version, as
// "postgresql-%d-plproxy") provides. When one of them is to run (by -run
// and -skip), the server starts before the tests and is asked whether it
// has ext. Without it the one rule of [RequireTool] holds: under CI the
// test binary fails at once; otherwise those examples are skipped (added
// to -skip) with one line naming the extension and the package.
func ExampleMainNeeding(m *testing.M, ext, debPackage string, examples ...string) {
	flag.Parse()
	if needed, err := willRun(examples); err != nil {
		exampleFatal(err)
	} else if needed {
		missing, err := missingExtension(ext, debPackage)
		if err != nil {
			exampleFatal(err)
		}
		if missing != "" {
			if InCI() {
				exampleFatal(fmt.Errorf("%s; CI=true, so a missing tool fails the examples instead of skipping them", missing))
			}
			skip := "^(" + strings.Join(examples, "|") + ")$"
			if old := flag.Lookup("test.skip").Value.String(); old != "" {
				skip = old + "|" + skip
			}
			if err := flag.Set("test.skip", skip); err != nil {
				exampleFatal(err)
			}
			skipped.Lock()
			for _, e := range examples {
				skipped.lines = append(skipped.lines, e+": "+missing)
			}
			skipped.Unlock()
		}
	}
	ExampleMain(m)
}

// willRun says whether -test.run and -test.skip let any of the top-level
// tests or examples names run.
func willRun(names []string) (bool, error) {
	match := func(flagName string, empty bool) (func(string) bool, error) {
		pattern, _, _ := strings.Cut(flag.Lookup(flagName).Value.String(), "/")
		if pattern == "" {
			return func(string) bool { return empty }, nil
		}
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, fmt.Errorf("-%s: %w", flagName, err)
		}
		return re.MatchString, nil
	}
	run, err := match("test.run", true)
	if err != nil {
		return false, err
	}
	skip, err := match("test.skip", false)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(names, func(n string) bool { return run(n) && !skip(n) }), nil
}

// missingExtension starts the examples' server and says what is missing
// when it cannot create the extension ext: "" when it can.
func missingExtension(ext, debPackage string) (string, error) {
	if err := startExamples(); err != nil {
		return "", err
	}
	var available bool
	var major int
	if err := WithConn(examples.base, func(conn *pgx.Conn) error {
		return conn.QueryRow(context.Background(), `select exists (select from pg_available_extensions where name = $1),
			current_setting('server_version_num')::integer / 10000`, ext).Scan(&available, &major)
	}); err != nil {
		return "", err
	}
	if available {
		return "", nil
	}
	return fmt.Sprintf("the extension %s is not available on PostgreSQL %d: apt-get install -y %s", ext, major, fmt.Sprintf(debPackage, major)), nil
}
