// Package shards tests chunks on several servers through a router that uses
// PL/Proxy (package router): one router and four shards, real throwaway
// servers on loopback, started at once. It needs the plproxy extension on
// the router's server (Debian's postgresql-MAJOR-plproxy): without it every
// test is skipped, and under CI=true it fails (pgtest.RequireTool). The
// version matrix of .ci/run does not run this package.
package shards

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

var ctx = context.Background()

// The servers of the package: the router's, four shards, a durable
// spare shard that one test kills and restarts, and a second router's
// server that logs every statement (loggedSettings).
var (
	routerServer *localpg.Server
	shardServers []*localpg.Server
	spareServer  *localpg.Server
	loggedServer *localpg.Server
	// noPlproxy says why the router's server has no plproxy; nil when it has.
	noPlproxy error
	// plproxyPackage is the Debian package that provides it for the
	// server's major version.
	plproxyPackage string
	// bin is the chunks binary, built once (pgtest.WithBinary).
	bin = pgtest.Binary()
)

func TestMain(m *testing.M) { pgtest.WithBinary(func() int { return run(m) }) }

func run(m *testing.M) (code int) {
	servers, err := startAll()
	defer func() {
		var errs []error
		for _, s := range servers {
			if s != nil {
				errs = append(errs, s.Stop())
			}
		}
		if err := errors.Join(errs...); err != nil {
			fmt.Fprintln(os.Stderr, "shards: clean up:", err)
			code = max(code, 1)
		}
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "shards:", err)
		return 1
	}
	routerServer, shardServers, spareServer, loggedServer = servers[0], servers[1:5], servers[5], servers[6]
	if noPlproxy, plproxyPackage, err = findPlproxy(routerServer); err != nil {
		fmt.Fprintln(os.Stderr, "shards:", err)
		return 1
	}
	code = m.Run()
	pgtest.ReportSkipped()
	return code
}

// loggedSettings make a server log every statement, with its parameters,
// in every way PostgreSQL can: as statements, with their durations, and as
// every statement of a sampled transaction (all of them).
var loggedSettings = []string{"log_statement=all", "log_min_duration_statement=0", "log_transaction_sample_rate=1"}

// startAll starts the seven servers, from one initdb.
func startAll() ([]*localpg.Server, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	opts := make([]localpg.Options, 7)
	opts[5].Durable = true // the spare shard is killed, and must keep its commits
	opts[6].Settings = loggedSettings
	return localpg.StartMany(ctx, opts...)
}

// findPlproxy says whether the server can create the plproxy extension,
// and names the Debian package for its major version.
func findPlproxy(s *localpg.Server) (missing error, debPackage string, err error) {
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return nil, "", err
	}
	defer func() { err = errors.Join(err, conn.Close(ctx)) }()
	var available bool
	var major int
	if err := conn.QueryRow(ctx, `select exists (select from pg_available_extensions where name = 'plproxy'),
		current_setting('server_version_num')::integer / 10000`).Scan(&available, &major); err != nil {
		return nil, "", err
	}
	debPackage = fmt.Sprintf("postgresql-%d-plproxy", major)
	if !available {
		missing = fmt.Errorf("the extension plproxy is not available on PostgreSQL %d (%s)", major, s.BinDir)
	}
	return missing, debPackage, nil
}
