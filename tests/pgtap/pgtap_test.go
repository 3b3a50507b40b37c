package pgtap

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestPgTAP runs every sql/*.sql file with pg_prove against a fresh chunks
// schema. The files use unqualified names: the connection's search_path is
// the chunks schema, then the schema of pgTAP. Each file runs in BEGIN ...
// ROLLBACK and leaves nothing behind.
func TestPgTAP(t *testing.T) {
	pgProve, err := exec.LookPath("pg_prove")
	pgtest.RequireTool(t, err, "pg_prove", "libtap-parser-sourcehandler-pgtap-perl")
	_, err = exec.LookPath("psql")
	pgtest.RequireTool(t, err, "psql (which pg_prove runs)", "postgresql-client")
	files, err := filepath.Glob(filepath.Join("sql", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no pgTAP files in sql/ (%v)", err)
	}
	sort.Strings(files)

	s := pgtest.NewSchema(t)
	tap := installExtension(t, s.Conn, "pgtap", "chunks_test_tap", "postgresql-%d-pgtap")
	env, err := psqlEnv(pgtest.DSN(), s.Name+","+tap)
	if err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	args := append([]string{"--norc", "--nocolor", "--verbose", "--ext", ".sql"}, files...)
	cmd := exec.CommandContext(runCtx, pgProve, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pg_prove %s failed (%v) with %s:\n%s", strings.Join(args, " "), err, pgEnvSummary(env), out)
	}
	t.Logf("pg_prove %s\n%s", strings.Join(args, " "), out)

	var left int64
	err = s.Conn.QueryRow(ctx, `select (select count(*) from orders) + (select count(*) from jobs) +
	                                   (select count(*) from job_audit)`).Scan(&left)
	if err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("the pgTAP files left %d rows in schema %s: each must run in BEGIN ... ROLLBACK", left, s.Name)
	}
}

// psqlEnv is this process's environment without any PG* variable, plus the
// libpq variables that connect psql to dsn with the given search_path.
// Other run-time parameters of dsn travel in PGOPTIONS too. TLS client
// certificates in dsn are not carried over.
func psqlEnv(dsn, searchPath string) ([]string, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse the test DSN: %w", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"PGHOST="+cfg.Host,
		"PGPORT="+strconv.Itoa(int(cfg.Port)),
		"PGUSER="+cfg.User,
		"PGDATABASE="+cfg.Database,
		"PGAPPNAME=chunks pg_prove",
		"PGSSLMODE="+sslMode(cfg),
	)
	if cfg.Password != "" {
		env = append(env, "PGPASSWORD="+cfg.Password)
	}
	if cfg.ConnectTimeout > 0 {
		env = append(env, "PGCONNECT_TIMEOUT="+strconv.Itoa(max(2, int(cfg.ConnectTimeout.Seconds()))))
	}
	// The DSN's own options come first, so the search_path set last wins.
	var opts []string
	if o := cfg.RuntimeParams["options"]; o != "" {
		opts = append(opts, o)
	}
	params := map[string]string{"search_path": searchPath}
	for k, v := range cfg.RuntimeParams {
		if k != "options" && k != "application_name" && k != "search_path" {
			params[k] = v
		}
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// libpq splits PGOPTIONS at spaces; a backslash escapes one.
		v := strings.NewReplacer(`\`, `\\`, " ", `\ `).Replace(params[k])
		opts = append(opts, "-c "+k+"="+v)
	}
	return append(env, "PGOPTIONS="+strings.Join(opts, " ")), nil
}

// sslMode is the libpq sslmode closest to what pgconn made of the DSN.
func sslMode(cfg *pgconn.Config) string {
	switch {
	case cfg.TLSConfig == nil:
		return "disable"
	case len(cfg.Fallbacks) > 0 && cfg.Fallbacks[0].TLSConfig == nil:
		return "prefer"
	case cfg.TLSConfig.InsecureSkipVerify:
		return "require"
	default:
		return "verify-full"
	}
}

// pgEnvSummary shows the PG* variables of env for a failure message, without
// the password.
func pgEnvSummary(env []string) string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "PGPASSWORD=") {
			out = append(out, kv)
		}
	}
	return strings.Join(out, " ")
}
