package shards

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
	"github.com/chunks-dev/chunks/router"
)

// A secret libpq keyword other than password (sslpassword,
// oauth_client_secret) has nowhere safe to go: PL/Proxy's user mapping
// takes only user and password, and every role that can connect to the
// router's database reads the cluster's options. So it is refused before
// any connection, naming the shard and the keyword, never the value. And a
// secret that a DBA (or an older chunks) wrote into the options by hand is
// never printed: not by router shards, not with --json, not by a new
// install, which replaces it. The paths of a client certificate are not
// secrets, and files of the router's server.
func TestInstallRefusesSecretsOutsideTheMapping(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers[:1])
	secret := "TopSecret" + randomHex(t)
	install := func(wantCode int, shard string) string {
		return runChunks(t, wantCode, "router", "install", "--json", "--dsn", routerServer.DSN(), "--schema", c.schema, "--shard", shard)
	}
	shard := shardServers[0].DSN()
	for _, tc := range []struct{ shard, key string }{
		{shard + " sslpassword=" + secret, "sslpassword"},
		{fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&sslpassword=%s", shardServers[0].Port, secret), "sslpassword"},
		{shard + " oauth_client_secret=" + secret, "oauth_client_secret"},
		{shard + " SSLPassword=" + secret, "SSLPassword"},
	} {
		out := install(2, tc.shard)
		if !strings.Contains(out, "chunks: invalid: shard p0: "+tc.key+": ") || strings.Contains(out, secret) {
			t.Errorf("install with %s: %s", tc.key, out)
		}
		err := router.Install(ctx, pgtest.Connect(t, routerServer.DSN()), router.Config{Schema: c.schema, Shards: []string{tc.shard}})
		if !errors.Is(err, driver.ErrInvalid) || strings.Contains(err.Error(), secret) {
			t.Errorf("router.Install with %s: %v", tc.key, err)
		}
	}
	options := func() string {
		t.Helper()
		var o string
		if err := pgtest.Connect(t, routerServer.DSN()).QueryRow(ctx,
			"select array_to_string(srvoptions, ' ') from pg_foreign_server where srvname = $1", router.Cluster(c.schema)).Scan(&o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	if o := options(); strings.Contains(o, secret) {
		t.Fatalf("a refused install wrote the secret into the cluster's options: %s", o)
	}

	// Written by hand into the partition's connection string.
	admin := pgtest.Connect(t, routerServer.DSN())
	var p0 string
	if err := admin.QueryRow(ctx, "select "+pgx.Identifier{c.schema, "shards"}.Sanitize()+"()->0->>'conninfo'").Scan(&p0); err != nil {
		t.Fatal(err)
	}
	hand := fmt.Sprintf("%s sslpassword='%s' password=%s", p0, secret, secret)
	var ddl string
	if err := admin.QueryRow(ctx, "select format('alter server %I options (set p0 %L)', $1::text, $2::text)", router.Cluster(c.schema), hand).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"router", "shards"}, {"router", "shards", "--json"}} {
		out := runChunks(t, 0, append(args, "--dsn", routerServer.DSN(), "--schema", c.schema)...)
		if strings.Contains(out, secret) || !strings.Contains(out, "sslpassword") || !strings.Contains(out, shardPort(shardServers[0].Port)) {
			t.Errorf("chunks %s with a secret in the cluster's options:\n%s", strings.Join(args, " "), out)
		}
	}
	shards, err := router.Shards(ctx, pgtest.Connect(t, c.routerDSN))
	if err != nil || len(shards) != 1 || strings.Contains(shards[0].Conninfo, secret) {
		t.Errorf("router.Shards with a secret in the cluster's options: %+v, %v", shards, err)
	}
	// The files of a client certificate are the router's server's, so this
	// process need not have them; their paths are no secret, and are shown.
	// (The shards here take no SSL: libpq on the router's server tries it,
	// and goes on without, never reading the files.)
	key := "/nonexistent/chunks-router-client.key"
	out := install(0, shard+" sslmode=prefer sslcert=/nonexistent/chunks-router-client.crt sslkey="+key)
	if strings.Contains(out, secret) || !strings.Contains(out, "sslkey='"+key+"'") {
		t.Errorf("install with a client certificate over a cluster with a secret in its options:\n%s", out)
	}
	if o := options(); strings.Contains(o, secret) {
		t.Errorf("install left the secret in the cluster's options: %s", o)
	}
}

// The user mapping's password never reaches the router's server log, even
// on a server that logs every statement with its parameters (loggedServer):
// install turns that logging off around the user mapping, and back on
// after it, so the other statements of the install are logged.
func TestInstallKeepsPasswordsOutOfTheLog(t *testing.T) {
	t.Parallel()
	requirePlproxy(t)
	c := newCluster(t, shardServers[:1])
	statements := trackStatements(t)
	admin := pgtest.Connect(t, loggedServer.DSN())
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "drop schema if exists "+c.schema+" cascade; drop server if exists "+router.Cluster(c.schema)+" cascade"); err != nil {
			t.Error(err)
		}
	})
	password := "TopSecret" + randomHex(t) // the shard trusts every local login: any password does
	sslPassword := "TopSecretSSL" + randomHex(t)
	shard := shardServers[0].DSN() + " password=" + password
	runChunks(t, 2, "router", "install", "--dsn", loggedServer.DSN(), "--schema", c.schema, "--shard", shard+" sslpassword="+sslPassword)
	out := runChunks(t, 0, "router", "install", "--dsn", loggedServer.DSN(), "--schema", c.schema, "--shard", shard)
	if err := router.Install(ctx, admin, router.Config{Schema: c.schema, Shards: []string{shard}}); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(loggedServer.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{password, sslPassword} {
		for _, line := range strings.Split(string(log)+out, "\n") {
			if strings.Contains(line, secret) {
				t.Errorf("the router's server log or the install's output holds a password: %s", line)
			}
		}
	}
	// Logging was on, before the user mapping and after it.
	cluster := router.Cluster(c.schema)
	for _, want := range []string{"create server " + cluster, "alter server " + cluster, pgx.Identifier{c.schema, "check_shards"}.Sanitize() + "()"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the router's server log does not show %q:\n%s", want, log)
		}
	}
	if statements != "" {
		var leaked []string
		var servers int
		if err := admin.QueryRow(ctx, `select coalesce(array_agg(query) filter (where strpos(query, $1) > 0 or strpos(query, $2) > 0), '{}'),
			count(*) filter (where strpos(query, 'create server ' || $3) > 0)
			  from `+statements+`.pg_stat_statements`, password, sslPassword, cluster).Scan(&leaked, &servers); err != nil {
			t.Fatal(err)
		}
		if len(leaked) > 0 || servers == 0 {
			t.Errorf("pg_stat_statements holds a password in %q (and the create server %d times)", leaked, servers)
		}
	}
	// And the session's settings are as they were.
	var rate string
	if err := admin.QueryRow(ctx, "select current_setting('log_transaction_sample_rate') || ' ' || current_setting('log_statement')").Scan(&rate); err != nil || rate != "1 all" {
		t.Errorf("after install, log_transaction_sample_rate and log_statement are %q, %v; want 1 all", rate, err)
	}
}

// trackStatements loads pg_stat_statements into loggedServer (it restarts
// the server once), which then keeps the text of every top-level statement,
// DDL too (track_utility), and returns the schema of its view; "" when the server's PostgreSQL has
// no pg_stat_statements.
func trackStatements(t *testing.T) string {
	t.Helper()
	conn, err := pgx.Connect(ctx, loggedServer.DSN())
	if err != nil {
		t.Fatal(err)
	}
	var available, loaded bool
	if err := conn.QueryRow(ctx, `select exists (select from pg_available_extensions where name = 'pg_stat_statements'),
		current_setting('shared_preload_libraries') = 'pg_stat_statements'`).Scan(&available, &loaded); err != nil {
		t.Fatal(err)
	}
	if !available {
		return ""
	}
	if !loaded {
		_, err := conn.Exec(ctx, "alter system set shared_preload_libraries = 'pg_stat_statements'")
		if err = errors.Join(err, conn.Close(ctx)); err != nil {
			t.Fatal(err)
		}
		if err := loggedServer.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if conn, err = pgx.Connect(ctx, loggedServer.DSN()); err != nil {
			t.Fatal(err)
		}
	}
	_, err = conn.Exec(ctx, "create schema if not exists statements; create extension if not exists pg_stat_statements schema statements")
	if err = errors.Join(err, conn.Close(ctx)); err != nil {
		t.Fatal(err)
	}
	return "statements"
}

// router install needs a superuser: a role that is not one is told so,
// not to run chunks grant (which is for the shards' chunks functions).
func TestInstallAsNonSuperuser(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers[:1])
	role := pgtest.NewRole(t, routerServer.DSN(), "installer")
	out := runChunks(t, 1, "router", "install", "--dsn", role.DSN(routerServer.DSN()), "--schema", c.schema, "--shard", shardServers[0].DSN())
	if !strings.HasPrefix(out, "chunks: router install "+c.schema+": needs a superuser on the router's server") || strings.Contains(out, "chunks grant") {
		t.Errorf("router install as a role that is not a superuser:\n%s", out)
	}
	err := router.Install(ctx, pgtest.Connect(t, role.DSN(routerServer.DSN())), router.Config{Schema: c.schema, Shards: []string{shardServers[0].DSN()}})
	if err == nil || !strings.Contains(err.Error(), "needs a superuser") {
		t.Errorf("router.Install as a role that is not a superuser: %v", err)
	}
}

// randomHex is 16 random hex digits.
func randomHex(t *testing.T) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}
