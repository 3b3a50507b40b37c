package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/tern/v2/migrate"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/dbutil"
	chunkssql "github.com/chunks-dev/chunks/sql"
)

// MaxShards bounds a router's shards; PL/Proxy wants a power of 2.
const MaxShards = 1024

// maxSchemaLen keeps the cluster's name, chunks_<schema>, within the 63
// characters of a PostgreSQL name, so two routers never share a cluster.
const maxSchemaLen = 63 - len("chunks_")

// Config is what [Install] sets up.
type Config struct {
	// Schema is the router's schema, where the routing functions go. It
	// holds no chunks data.
	Schema string
	// ShardSchema is the chunks schema on every shard (chunks migrate
	// --schema). Empty: Schema.
	ShardSchema string
	// Shards are the shards' connection strings, URL or keyword/value, in
	// partition order: Shards[i] is partition p<i>. Their number is a power
	// of 2 (1, 2, 4, ...). The router's server connects with them, so they
	// name what it needs (host, port, dbname); the PG* variables of this
	// process do not apply, and sslcert, sslkey and sslrootcert name files
	// of the router's server. Every shard is reached as one role: their
	// users and passwords, if given, must be the same, and they go into the
	// user mapping, never into the cluster's options. No other secret
	// (sslpassword, oauth_client_secret) may be given: the user mapping
	// cannot hold it.
	Shards []string
}

// Cluster is the name of the PL/Proxy cluster (a foreign server) of the
// router in schema: chunks_<schema>.
func Cluster(schema string) string { return "chunks_" + schema }

// partition is one shard as the cluster holds it.
type partition struct {
	name     string   // p0, p1, ...
	conninfo conninfo // without user and password
}

// Install sets up a router database on conn in ONE transaction, or brings
// one up to date (it is idempotent, and re-running it with other shards
// reshards the router):
//
//   - the PL/Proxy extension, in its own schema plproxy (CREATE EXTENSION
//     needs a superuser);
//   - the cluster chunks_<schema>: a foreign server of the plproxy wrapper
//     with one option per shard, p0 ... pN-1, and a user mapping for the
//     current user with the shards' user and password;
//   - the routing functions in cfg.Schema (sql/router).
//
// It needs a superuser (CREATE EXTENSION, and the settings below), and
// refuses any other role at once. The user mapping's password is written
// with the server's statement logging off (log_statement,
// log_min_duration_statement and the others of [quietSettings], SET LOCAL
// around it) and, for the install's session, log_transaction_sample_rate
// 0: DDL takes no bind parameters, so the password is in the statement's
// text. The shards' connection strings must hold no other secret
// (sslpassword, oauth_client_secret): PL/Proxy's user mapping cannot take
// one, and every role that can connect reads the cluster's options.
//
// Before it commits, every shard must answer through the new cluster and
// have chunks installed in cfg.ShardSchema: a failure names the shard and
// leaves nothing behind. It refuses a schema that holds chunks data (a
// router's register would replace the shard's). Many processes may run it
// at once: a transaction advisory lock serializes the installs of a
// database (its routers share the extension). conn must not be inside a
// transaction.
func Install(ctx context.Context, conn *pgx.Conn, cfg Config) (err error) {
	parts, mapping, err := cfg.check()
	if err != nil {
		return err
	}
	if status := conn.PgConn().TxStatus(); status != 'I' {
		return driver.Invalidf("conn: is inside a transaction (status %q); Install commits, so it needs an idle connection", status)
	}
	shardSchema := cfg.ShardSchema
	if shardSchema == "" {
		shardSchema = cfg.Schema
	}
	code, err := migrate.LoadCodePackage(chunkssql.Router())
	if err != nil {
		return fmt.Errorf("router install %s: load functions: %w", cfg.Schema, err)
	}
	functions, err := code.Eval(map[string]any{"schema": cfg.Schema, "shard_schema": shardSchema, "cluster": Cluster(cfg.Schema)})
	if err != nil {
		return fmt.Errorf("router install %s: functions: %w", cfg.Schema, err)
	}
	if err := checkSuperuser(ctx, conn); err != nil {
		return fmt.Errorf("router install %s: %w", cfg.Schema, err)
	}
	restore, err := unsampled(ctx, conn)
	if err != nil {
		return fmt.Errorf("router install %s: %w", cfg.Schema, err)
	}
	defer func() {
		// Restored even when ctx is cancelled; a lost connection needs none.
		if rerr := restore(context.WithoutCancel(ctx)); rerr != nil && !conn.IsClosed() {
			err = errors.Join(err, fmt.Errorf("router install %s: %w", cfg.Schema, rerr))
		}
	}()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("router install %s: %w", cfg.Schema, err)
	}
	if err := install(ctx, tx, cfg.Schema, shardSchema, parts, mapping, functions); err != nil {
		err = dbutil.RollbackWithoutCancel(ctx, tx, err)
		return fmt.Errorf("router install %s: %w", cfg.Schema, driver.MapError(err))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("router install %s: commit: %w", cfg.Schema, err)
	}
	return nil
}

// checkSuperuser refuses a role that is not a superuser: the install
// creates the extension plproxy and turns the server's logging off around
// the user mapping, which only a superuser may do.
func checkSuperuser(ctx context.Context, conn *pgx.Conn) error {
	var super bool
	var role string
	if err := conn.QueryRow(ctx, "select rolsuper, rolname from pg_roles where rolname = current_user").Scan(&super, &role); err != nil {
		return err
	}
	if !super {
		return fmt.Errorf("needs a superuser on the router's server (it creates the extension plproxy, "+
			"and keeps the user mapping's password out of the server's log), and the role %s is not one: "+
			"run it with a --dsn that logs in as a superuser", pgx.Identifier{role}.Sanitize())
	}
	return nil
}

// unsampled turns log_transaction_sample_rate off for conn's session until
// restore: a transaction the server samples has every statement logged, and
// whether it does is decided when the transaction begins, so no SET LOCAL
// inside it can take that back.
func unsampled(ctx context.Context, conn *pgx.Conn) (restore func(context.Context) error, err error) {
	var rate string
	if err := conn.QueryRow(ctx, "select current_setting('log_transaction_sample_rate')").Scan(&rate); err != nil {
		return nil, err
	}
	if rate == "0" {
		return func(context.Context) error { return nil }, nil
	}
	set := func(ctx context.Context, value string) error {
		_, err := conn.Exec(ctx, "select set_config('log_transaction_sample_rate', $1, false)", value)
		return err
	}
	if err := set(ctx, "0"); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return set(ctx, rate) }, nil
}

// Validate checks cfg as [Install] does first, needing no database: the
// schemas, the number of shards (a power of 2) and each connection string
// (never shown in an error: it may hold a password).
func (cfg Config) Validate() error {
	_, _, err := cfg.check()
	return err
}

// check is [Config.Validate]; it returns the partitions and the user
// mapping's options.
func (cfg Config) check() ([]partition, conninfo, error) {
	for _, s := range []struct{ field, value string }{{"schema", cfg.Schema}, {"shard_schema", cfg.ShardSchema}} {
		if s.value == "" && s.field == "shard_schema" {
			continue
		}
		if err := driver.CheckSchema(s.value); err != nil {
			var de *driver.Error
			if errors.As(err, &de) && s.field != "schema" {
				return nil, nil, driver.Invalidf("%s%s", s.field, strings.TrimPrefix(de.Msg, "schema"))
			}
			return nil, nil, err
		}
	}
	if len(cfg.Schema) > maxSchemaLen {
		return nil, nil, driver.Invalidf("schema: a router's schema has at most %d characters (its PL/Proxy cluster is named chunks_<schema>), got %d", maxSchemaLen, len(cfg.Schema))
	}
	n := len(cfg.Shards)
	if n < 1 || n > MaxShards || n&(n-1) != 0 {
		return nil, nil, driver.Invalidf("shards: PL/Proxy needs a power of 2 of them (1, 2, 4, ... %d), got %d", MaxShards, n)
	}
	parts := make([]partition, n)
	var mapping conninfo
	for i, dsn := range cfg.Shards {
		name := "p" + strconv.Itoa(i)
		c, err := parseConninfo(dsn)
		if err != nil {
			return nil, nil, driver.Invalidf("shard %s: dsn: %v", name, err)
		}
		if _, err := driver.ParseDSN(c.without(serverFiles...).String()); err != nil {
			return nil, nil, driver.Invalidf("shard %s: %s", name, strings.TrimPrefix(err.Error(), "invalid: "))
		}
		for _, p := range c {
			if isSecret(p.key) && p.key != "password" {
				return nil, nil, driver.Invalidf("shard %s: %s: a router has nowhere to keep it secret (every role that can connect to the router's "+
					"database reads the cluster's options, and PL/Proxy's user mapping takes only user and password); give the router's "+
					"server a client key without a passphrase (sslkey, a file there that only its OS user reads), or use a password", name, p.key)
			}
		}
		var role conninfo
		for _, key := range []string{"user", "password"} {
			if v, ok := c.get(key); ok {
				role = append(role, param{key, v})
			}
		}
		if i == 0 {
			mapping = role
		} else if role.String() != mapping.String() {
			return nil, nil, driver.Invalidf("shard %s: names another user or password than shard p0; every shard of a router is reached as one role (its user mapping)", name)
		}
		c = c.compact().without("user", "password")
		if _, ok := c.get("connect_timeout"); !ok {
			// A shard that does not answer fails its calls at once.
			c = c.with("connect_timeout", strconv.Itoa(int(driver.ConnectTimeout.Seconds())))
		}
		// The shard's name reaches its sessions as the setting
		// chunks.shard, so that a call of every shard knows where each
		// answer came from.
		options, _ := c.get("options")
		c = c.with("options", strings.TrimSpace(options+" -c chunks.shard="+name))
		parts[i] = partition{name: name, conninfo: c}
	}
	return parts, mapping, nil
}

// install is Install's transaction.
func install(ctx context.Context, tx pgx.Tx, schema, shardSchema string, parts []partition, mapping conninfo, functions string) error {
	// One lock for every router of the database, not one per schema: they
	// share the schema plproxy and the extension, whose concurrent CREATE ...
	// IF NOT EXISTS collide in the catalog.
	if _, err := tx.Exec(ctx, "select pg_advisory_xact_lock(hashtextextended($1, 0))", "chunks router install"); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	var holdsData bool
	if err := tx.QueryRow(ctx, "select to_regclass($1) is not null", schema+".jobs").Scan(&holdsData); err != nil {
		return err
	}
	if holdsData {
		return driver.Invalidf("schema: %s holds chunks data (the table %s.jobs): a router's schema holds only routing functions; choose another schema or database", schema, schema)
	}
	if _, err := tx.Exec(ctx, "create schema if not exists plproxy"); err != nil {
		return fmt.Errorf("create schema plproxy: %w", err)
	}
	if _, err := tx.Exec(ctx, "create extension if not exists plproxy schema plproxy"); err != nil {
		return fmt.Errorf("create extension plproxy: %w (the router's server needs PL/Proxy: apt-get install postgresql-MAJOR-plproxy, "+
			"MAJOR being its PostgreSQL major version; and a superuser to create the extension)", err)
	}
	if _, err := tx.Exec(ctx, "create schema if not exists "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	if err := setCluster(ctx, tx, Cluster(schema), parts); err != nil {
		return err
	}
	if err := quietly(ctx, tx, func() error { return setMapping(ctx, tx, Cluster(schema), mapping) }); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, functions); err != nil {
		return fmt.Errorf("install functions: %w", err)
	}
	return checkShards(ctx, tx, schema, shardSchema)
}

// setCluster creates the foreign server of the cluster with one option per
// partition, or changes an existing one's partitions to these (options that
// are not partitions, set by a DBA, stay).
func setCluster(ctx context.Context, tx pgx.Tx, cluster string, parts []partition) error {
	var exists bool
	var wrapper string
	var options []string
	err := tx.QueryRow(ctx, `select true, w.fdwname, coalesce(s.srvoptions, '{}')
		  from pg_foreign_server as s join pg_foreign_data_wrapper as w on w.oid = s.srvfdw
		 where s.srvname = $1`, cluster).Scan(&exists, &wrapper, &options)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("read the cluster %s: %w", cluster, err)
	}
	if exists && wrapper != "plproxy" {
		return driver.Invalidf("schema: the foreign server %s exists for the wrapper %s, not plproxy; drop it or choose another schema", cluster, wrapper)
	}
	old := map[string]bool{}
	for _, o := range options {
		key, _, _ := strings.Cut(o, "=")
		old[key] = true
	}
	var actions, keys, values []string
	for _, p := range parts {
		action := "add"
		if old[p.name] {
			action = "set"
		}
		actions, keys, values = append(actions, action), append(keys, p.name), append(values, p.conninfo.String())
		delete(old, p.name)
	}
	for key := range old {
		if isPartition(key) {
			actions, keys, values = append(actions, "drop"), append(keys, key), append(values, "")
		}
	}
	head := "create server %I foreign data wrapper plproxy options (%s)"
	if exists {
		head = "alter server %I options (%s)"
	} else {
		actions = nil // CREATE SERVER takes plain options
	}
	return execOptions(ctx, tx, head, cluster, actions, keys, values)
}

func isPartition(key string) bool {
	n, err := strconv.Atoi(strings.TrimPrefix(key, "p"))
	return strings.HasPrefix(key, "p") && err == nil && n >= 0
}

// quietSettings keep a statement, and its parameters, out of the server's
// log (and pg_stat_statements), whatever the server's configuration:
// statements, their durations, sampled durations, and the statement of an
// error.
var quietSettings = map[string]string{
	"log_statement":                    "none",
	"log_min_duration_statement":       "-1",
	"log_min_duration_sample":          "-1",
	"log_min_error_statement":          "panic",
	"pg_stat_statements.track_utility": "off",
}

// quietly runs fn with [quietSettings] SET LOCAL, then sets them back to
// what they were (a failure rolls the transaction back, and them with it).
// The statements that set them back are not logged either.
func quietly(ctx context.Context, tx pgx.Tx, fn func() error) error {
	var names, values []string
	for name, value := range quietSettings {
		names, values = append(names, name), append(values, value)
	}
	var old []pgtype.Text // NULL: pg_stat_statements is not loaded
	if err := tx.QueryRow(ctx, `select array_agg(current_setting(n, true) order by i)
		  from unnest($1::text[]) with ordinality as s(n, i)`, names).Scan(&old); err != nil {
		return fmt.Errorf("read the log settings: %w", err)
	}
	set := "select set_config(n, v, true) from unnest($1::text[], $2::text[]) as s(n, v) where v is not null"
	if _, err := tx.Exec(ctx, set, names, values); err != nil {
		return fmt.Errorf("turn statement logging off: %w", err)
	}
	if err := fn(); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, set, names, old); err != nil {
		return fmt.Errorf("turn statement logging back on: %w", err)
	}
	return nil
}

// setMapping makes the current user's mapping of the cluster hold exactly
// the shards' user and password (the mappings of other roles stay).
func setMapping(ctx context.Context, tx pgx.Tx, cluster string, mapping conninfo) error {
	if _, err := tx.Exec(ctx, "drop user mapping if exists for current_user server "+pgx.Identifier{cluster}.Sanitize()); err != nil {
		return fmt.Errorf("user mapping: %w", err)
	}
	head := "create user mapping for current_user server %I"
	var keys, values []string
	for _, p := range mapping {
		keys, values = append(keys, p.key), append(values, p.value)
	}
	if len(keys) > 0 {
		head += " options (%s)"
	}
	return execOptions(ctx, tx, head, cluster, nil, keys, values)
}

// execOptions runs a DDL statement that takes a name and a list of options.
// DDL takes no bind parameters, so the server quotes them: format() with
// %I and %L, on bound values, builds the statement, which then runs.
// actions (add, set, drop) are for ALTER; nil for CREATE.
func execOptions(ctx context.Context, tx pgx.Tx, head, name string, actions, keys, values []string) error {
	var ddl string
	err := tx.QueryRow(ctx, `select format($1, $2::text,
		  (select string_agg(case when a.action = 'drop' then format('drop %I', a.key)
		                          else ltrim(format('%s %I %L', a.action, a.key, a.value)) end, ', ' order by a.n)
		     from unnest($3::text[], $4::text[], $5::text[]) with ordinality as a(action, key, value, n)))`,
		head, name, padded(actions, len(keys)), keys, values).Scan(&ddl)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, ddl); err != nil {
		return fmt.Errorf("%s: %w", strings.SplitN(head, " %", 2)[0], err)
	}
	return nil
}

// padded is actions, or n empty ones for a CREATE.
func padded(actions []string, n int) []string {
	if actions != nil {
		return actions
	}
	return make([]string, n)
}

// checkShards asks every shard, through the new cluster, whether it has
// chunks (SQL check_shards).
func checkShards(ctx context.Context, tx pgx.Tx, schema, shardSchema string) error {
	var body []byte
	if err := tx.QueryRow(ctx, "select "+pgx.Identifier{schema, "check_shards"}.Sanitize()+"()::text").Scan(&body); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "08006" {
			return fmt.Errorf("check the shards: %w", err)
		}
		return err
	}
	var shards []struct {
		Shard     string `json:"shard"`
		Installed bool   `json:"installed"`
	}
	if err := json.Unmarshal(body, &shards); err != nil {
		return fmt.Errorf("check_shards: %w", err)
	}
	for _, s := range shards {
		if !s.Installed {
			return driver.Invalidf("shard %s: has no chunks in schema %s: run chunks migrate --schema %s on it first", s.Shard, shardSchema, shardSchema)
		}
	}
	return nil
}
