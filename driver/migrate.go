package driver

import (
	"context"
	"fmt"
	"regexp"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"github.com/chunks-dev/chunks/internal/dbutil"
	chunkssql "github.com/chunks-dev/chunks/sql"
)

// schemaPattern is what Migrate accepts as a target schema: a lowercase
// identifier, written unquoted everywhere (the {{ .schema }} of every SQL
// file, tern's version table name, search_path).
var schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// reservedWords are the PostgreSQL keywords that cannot name a schema
// unquoted ("select.orders" is a syntax error): those of category R
// (reserved) and T (reserved, can be a function or type name) in
// pg_get_keywords() of PostgreSQL 13 to 18. tests/sql_migrate_test.go
// checks the list against the server it runs on.
var reservedWords = []string{
	"all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "authorization",
	"binary", "both", "case", "cast", "check", "collate", "collation", "column", "concurrently",
	"constraint", "create", "cross", "current_catalog", "current_date", "current_role",
	"current_schema", "current_time", "current_timestamp", "current_user", "default", "deferrable",
	"desc", "distinct", "do", "else", "end", "except", "false", "fetch", "for", "foreign", "freeze",
	"from", "full", "grant", "group", "having", "ilike", "in", "initially", "inner", "intersect",
	"into", "is", "isnull", "join", "lateral", "leading", "left", "like", "limit", "localtime",
	"localtimestamp", "natural", "not", "notnull", "null", "offset", "on", "only", "or", "order",
	"outer", "overlaps", "placing", "primary", "references", "returning", "right", "select",
	"session_user", "similar", "some", "symmetric", "system_user", "table", "tablesample", "then",
	"to", "trailing", "true", "union", "unique", "user", "using", "variadic", "verbose", "when",
	"where", "window", "with",
}

// CheckSchema returns an [ErrInvalid] naming "schema" unless schema can hold
// chunks: a lowercase identifier of at most 63 characters (a-z, 0-9, _, not
// starting with a digit) that is not a schema of the system (public,
// information_schema, pg_*) and not a reserved SQL keyword. It needs no
// database.
func CheckSchema(schema string) error {
	switch {
	case !schemaPattern.MatchString(schema):
		return Invalidf("schema: must be a lowercase identifier of 1 to 63 characters (a-z, 0-9, _; not starting with a digit), got %s", Excerpt(schema, true))
	case schema == "public" || schema == "information_schema" || len(schema) >= 3 && schema[:3] == "pg_":
		return Invalidf("schema: %s belongs to the system (public, information_schema, pg_*); choose a schema of your own", schema)
	case slices.Contains(reservedWords, schema):
		return Invalidf("schema: %s is a reserved SQL keyword; choose another name", schema)
	}
	return nil
}

// MigrateOptions are the choices of a [Migrate]. The zero value keeps the
// schema's owner.
type MigrateOptions struct {
	// Owner (a role name, exactly as pg_roles spells it; "" keeps the
	// schema's owner, or the migrating role owns a new schema) becomes the
	// owner of schema and of everything in it: its tables and the
	// functions, which are SECURITY DEFINER and so act with Owner's rights
	// for every operator and viewer. The role that runs Migrate must then be
	// a superuser or a member of Owner, and be allowed to change the owner
	// of what it does not own. Owner should not be a superuser: see
	// docs/roles.md.
	Owner string
	// Writer (a role name, as pg_roles spells it; "" keeps the recorded
	// one, else SCHEMA_writer, created NOLOGIN when the migrating role may
	// create roles) is the role that reads and writes the user's tables of
	// declared changes: their triggers, policies and domain checks run as
	// it, never as Owner. It must be an ordinary role that is a member of
	// no role and holds nothing of chunks; the owners of those tables grant
	// it SELECT and UPDATE. See docs/roles.md "Code on your tables".
	Writer string
}

// Migrate installs chunks into schema, or upgrades it, in ONE transaction:
// it creates the schema when missing, runs the pending tern migrations
// (tables; tern's version table is schema.schema_version, as the tern CLI
// keeps it) and installs the functions (CREATE OR REPLACE, so data, oids and
// grants stay). A failure rolls all of it back, the new schema included.
// Running it again changes nothing. Many processes may run it at once: a
// transaction advisory lock on the schema's name serializes them
// (concurrent CREATE SCHEMA IF NOT EXISTS and CREATE OR REPLACE FUNCTION
// collide in the catalog otherwise). Nothing is created outside schema. A
// schema that holds a chunks router (package router) is refused.
//
// Everything in schema belongs to the schema's owner (docs/roles.md): the
// role that runs Migrate when it creates the schema, else whoever owns it
// already. What the role running Migrate creates or owns there (tables,
// sequences, functions) is handed to that owner in the same transaction, so
// the SECURITY DEFINER functions always run as it; an orders table that a
// third role (the application) owns stays its own, and the owner is granted
// SELECT and UPDATE on it. opts.Owner names the owner instead.
//
// conn must not be inside a transaction.
func Migrate(ctx context.Context, conn *pgx.Conn, schema string, opts MigrateOptions) error {
	owner := opts.Owner
	if err := CheckSchema(schema); err != nil {
		return err
	}
	if status := conn.PgConn().TxStatus(); status != 'I' {
		return Invalidf("conn: is inside a transaction (status %q); Migrate commits, so it needs an idle connection", status)
	}
	data := map[string]any{"schema": schema}
	versionTable := schema + ".schema_version"
	// A migrator without a connection only loads: tern evaluates each file's
	// template with data. The SQL is run below, in this function's transaction.
	m, err := migrate.NewMigrator(ctx, nil, versionTable)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", schema, err)
	}
	m.Data = data
	if err := m.LoadMigrations(chunkssql.Migrations()); err != nil {
		return fmt.Errorf("migrate %s: load migrations: %w", schema, err)
	}
	code, err := migrate.LoadCodePackage(chunkssql.Functions())
	if err != nil {
		return fmt.Errorf("migrate %s: load functions: %w", schema, err)
	}
	functions, err := code.Eval(data)
	if err != nil {
		return fmt.Errorf("migrate %s: functions: %w", schema, err)
	}

	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", schema, err)
	}
	if err := install(ctx, tx, schema, owner, opts.Writer, versionTable, m.Migrations, functions); err != nil {
		return dbutil.RollbackWithoutCancel(ctx, tx, fmt.Errorf("migrate %s: %w", schema, err))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate %s: commit: %w", schema, err)
	}
	return nil
}

// install is Migrate's transaction.
func install(ctx context.Context, tx pgx.Tx, schema, owner, writer, versionTable string, migrations []*migrate.Migration, functions string) error {
	if _, err := tx.Exec(ctx, "select pg_advisory_xact_lock(hashtextextended($1, 0))", "chunks migrate "+schema); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if err := ownerExists(ctx, tx, owner); err != nil {
		return err
	}
	var router bool
	if err := tx.QueryRow(ctx, "select to_regprocedure($1) is not null", schema+".shard_of(text)").Scan(&router); err != nil {
		return fmt.Errorf("look for a router: %w", err)
	}
	if router {
		// Its register(jsonb) would be replaced by the one that writes here.
		return Invalidf("schema: %s holds a chunks router (chunks router install), which keeps no chunks data; migrate the shards instead", schema)
	}
	if err := holdChunks(ctx, tx, schema); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "create schema if not exists "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	// tern's version table, exactly as tern creates it.
	if _, err := tx.Exec(ctx, fmt.Sprintf(`create table if not exists %[1]s(version int4 not null);
		insert into %[1]s(version) select 0 where 0 = (select count(*) from %[1]s)`, versionTable)); err != nil {
		return fmt.Errorf("version table: %w", err)
	}
	var version int32
	if err := tx.QueryRow(ctx, "select version from "+versionTable).Scan(&version); err != nil {
		return fmt.Errorf("version: %w", err)
	}
	if version < 0 || int(version) > len(migrations) {
		return fmt.Errorf("%s is %d, outside the valid versions 0 to %d", versionTable, version, len(migrations))
	}
	for _, mig := range migrations[version:] {
		if _, err := tx.Exec(ctx, mig.UpSQL); err != nil {
			return fmt.Errorf("migration %s: %w", mig.Name, err)
		}
		if _, err := tx.Exec(ctx, "update "+versionTable+" set version = $1", mig.Sequence); err != nil {
			return fmt.Errorf("version: %w", err)
		}
	}
	// install.sql ends with install_writer(), which reads the writer asked
	// for here, and the owner the schema is about to be handed to.
	if _, err := tx.Exec(ctx, "select set_config('chunks.writer', $1, true), set_config('chunks.owner', $2, true)", writer, owner); err != nil {
		return fmt.Errorf("writer: %w", err)
	}
	if _, err := tx.Exec(ctx, functions); err != nil {
		return fmt.Errorf("install functions: %w", err)
	}
	if err := handOwnership(ctx, tx, schema, owner); err != nil {
		return err
	}
	return restoreOwner(ctx, tx, schema)
}

// holdChunks waits for the fleet's passes in flight on schema to end and
// holds new ones until the migrate commits, so that no pass runs half old
// code and half new: a pass in flight when the functions change looks up
// each function it has yet to call anew, and one the new install dropped
// (an old helper's signature) failed it with 42883 and paused its job.
// Every pass claims its job with a ROW SHARE lock on job_queue in its first
// statement; EXCLUSIVE waits for those, holds new claims and lets plain
// reads (status, the page) through. job_queue only: a register takes jobs
// and then job_queue, and a migrate that also held jobs could deadlock with
// it. A chunk run directly (run_chunk, chunks drain) in flight across the
// commit may still fail with 42883; it leaves nothing half done and runs
// again (docs/installing-and-upgrading.md).
func holdChunks(ctx context.Context, tx pgx.Tx, schema string) error {
	queue := pgx.Identifier{schema, "job_queue"}.Sanitize()
	var exists bool
	if err := tx.QueryRow(ctx, "select to_regclass($1) is not null", queue).Scan(&exists); err != nil {
		return fmt.Errorf("look for job_queue: %w", err)
	}
	if !exists {
		return nil
	}
	if _, err := tx.Exec(ctx, "lock table "+queue+" in exclusive mode"); err != nil {
		return fmt.Errorf("wait for the passes in flight: %w", err)
	}
	return nil
}

// ownerExists refuses an owner ("": none asked for) that is no role,
// before anything is installed (so no notice of the install is said first).
func ownerExists(ctx context.Context, tx pgx.Tx, owner string) error {
	if owner == "" {
		return nil
	}
	var exists bool
	if err := tx.QueryRow(ctx, "select exists (select from pg_roles where rolname = $1)", owner).Scan(&exists); err != nil {
		return fmt.Errorf("owner: %w", err)
	}
	if !exists {
		return Invalidf("owner: there is no role %s; create it first (CREATE ROLE %s NOLOGIN)", Excerpt(owner, true), pgx.Identifier{owner}.Sanitize())
	}
	return nil
}

// restoreOwner gives the schema's owner back every privilege of its own that
// it lost (a REVOKE it ran on itself): on the schema, on the tables it owns
// there and EXECUTE on its functions. Those privileges are what every
// SECURITY DEFINER function runs with. Nothing is granted that it holds.
func restoreOwner(ctx context.Context, tx pgx.Tx, schema string) error {
	return execAll(ctx, tx, "owner's privileges", `
	  with o as (select nspowner as r, pg_get_userbyid(nspowner) as name from pg_namespace where nspname = $1)
	  select format('grant all on schema %I to %I', $1::text, o.name)
	    from o
	   where not (has_schema_privilege(o.r, $1::text, 'USAGE') and has_schema_privilege(o.r, $1::text, 'CREATE'))
	  union all
	  select format('grant all on table %I.%I to %I', $1::text, c.relname, o.name)
	    from o join pg_class as c on c.relowner = o.r
	   where c.relnamespace = $1::regnamespace and c.relkind in ('r', 'p')
	     and exists (select from unnest(array['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) as k
	                  where not has_table_privilege(o.r, c.oid, k))
	  union all
	  select format('grant execute on function %I.%I(%s) to %I', $1::text, p.proname, pg_get_function_identity_arguments(p.oid), o.name)
	    from o join pg_proc as p on p.proowner = o.r
	   where p.pronamespace = $1::regnamespace and not has_function_privilege(o.r, p.oid, 'EXECUTE')`, schema)
}

// execAll runs, one by one, the statements that query (with args) returns.
// what names them in an error.
func execAll(ctx context.Context, tx pgx.Tx, what, query string, args ...any) error {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	statements, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, sql := range statements {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %s: %w", what, sql, err)
		}
	}
	return nil
}

// handOwnership makes owner ("": the schema's owner) own schema and every table,
// view, sequence and function in it that the role running migrate or the
// schema's owner owned; a third role's orders stays its own, and owner is
// granted SELECT and UPDATE on it.
func handOwnership(ctx context.Context, tx pgx.Tx, schema, owner string) error {
	if owner == "" {
		if err := tx.QueryRow(ctx, "select nspowner::regrole::text from pg_namespace where nspname = $1", schema).Scan(&owner); err != nil {
			return fmt.Errorf("owner: %w", err)
		}
	} else {
		owner = pgx.Identifier{owner}.Sanitize()
	}
	// The statements, in one query: the schema first, then what is in it
	// (a table takes its indexes and the sequences of its columns along).
	// What a third role owns (an application's orders, made before chunks
	// came) stays that role's: the owner is granted what the functions need.
	return execAll(ctx, tx, "owner", `
	  with mine as (select current_user::regrole as r union select nspowner from pg_namespace where nspname = $1)
	  select format('alter schema %I owner to %s', n.nspname, $2::text)
	    from pg_namespace as n
	   where n.nspname = $1 and n.nspowner <> $2::regrole
	  union all
	  select format('grant select, update on table %I.%I to %s', $1::text, c.relname, $2::text)
	    from pg_class as c
	   where c.relnamespace = $1::regnamespace and c.relname = 'orders' and c.relowner <> $2::regrole
	     and c.relowner not in (select r from mine)
	  union all
	  select format(case c.relkind when 'v' then 'alter view %s owner to %s' when 'm' then 'alter materialized view %s owner to %s'
	                               when 'S' then 'alter sequence %s owner to %s' else 'alter table %s owner to %s' end,
	                format('%I.%I', $1::text, c.relname), $2::text)
	    from pg_class as c
	   where c.relnamespace = $1::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'S') and c.relowner <> $2::regrole
	     and c.relowner in (select r from mine)
	     and not exists (select from pg_depend as d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype in ('a', 'i'))
	  union all
	  select format('alter function %I.%I(%s) owner to %s', $1::text, p.proname, pg_get_function_identity_arguments(p.oid), $2::text)
	    from pg_proc as p
	   where p.pronamespace = $1::regnamespace and p.proowner <> $2::regrole and p.proowner in (select r from mine)`, schema, owner)
}
