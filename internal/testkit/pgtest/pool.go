package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
)

// A migrate costs about 0.5 to 0.8 s of server time, and most tests want a
// fresh chunks schema. So a test binary keeps the schemas its tests are
// done with, and hands one out again once it is exactly as a migrate left
// it: its tables emptied and the functions a test added dropped, and then
// its catalog fingerprint (owners, privileges, columns, constraints,
// indexes, triggers, policies, every function's text and settings, where
// each sequence stands, the writer role) and the contents of the tables a migrate fills
// compared with those it had right after its migrate. A schema that differs
// in anything is dropped, and the next test gets a newly migrated one.
var pool struct {
	mu       sync.Mutex
	free     []*pooled
	migrated atomic.Int64 // schemas migrated for a test
	reused   atomic.Int64 // schemas handed out again
	dropped  atomic.Int64 // schemas a test left different, dropped
}

// pooled is a migrated schema and what it looked like right after its migrate.
type pooled struct {
	name      string
	functions []string          // its functions, as regprocedure text
	emptied   []string          // its tables that a migrate leaves empty, quoted
	filled    map[string]string // the others: quoted name -> contents fingerprint
	print     string            // catalog fingerprint
}

// takeSchema hands out a pooled schema, or migrates a new one.
func takeSchema(t testing.TB, admin *pgx.Conn) *pooled {
	pool.mu.Lock()
	if n := len(pool.free); n > 0 {
		p := pool.free[n-1]
		pool.free = pool.free[:n-1]
		pool.mu.Unlock()
		pool.reused.Add(1)
		return p
	}
	pool.mu.Unlock()
	ctx := context.Background()
	name := NewSchemaName(t)
	if err := driver.Migrate(ctx, admin, name, driver.MigrateOptions{}); err != nil {
		t.Fatalf("migrate %s: %v", name, err)
	}
	p, err := pristine(ctx, admin, name)
	if err != nil {
		t.Fatalf("fingerprint %s: %v", name, err)
	}
	pool.migrated.Add(1)
	return p
}

// giveBack resets p for the next test and pools it, or drops it when the
// test left it different (or dropped it itself).
func giveBack(ctx context.Context, admin *pgx.Conn, p *pooled) error {
	same, err := reset(ctx, admin, p)
	if err != nil {
		err = fmt.Errorf("reset schema %s: %w", p.name, err)
	}
	if err == nil && same {
		pool.mu.Lock()
		pool.free = append(pool.free, p)
		pool.mu.Unlock()
		return nil
	}
	pool.dropped.Add(1)
	// if exists: a test may drop it itself.
	if _, dropErr := admin.Exec(ctx, "drop schema if exists "+pgx.Identifier{p.name}.Sanitize()+" cascade"); dropErr != nil {
		return errors.Join(err, fmt.Errorf("drop schema %s: %w", p.name, dropErr))
	}
	return err
}

// pristine reads what schema looks like right after its migrate.
func pristine(ctx context.Context, conn *pgx.Conn, schema string) (*pooled, error) {
	p := &pooled{name: schema, filled: map[string]string{}}
	rows, err := conn.Query(ctx, `select p.oid::regprocedure::text from pg_proc as p where p.pronamespace = $1::regnamespace`, schema)
	if err != nil {
		return nil, err
	}
	if p.functions, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return nil, err
	}
	rows, err = conn.Query(ctx, `select format('%I.%I', n.nspname, c.relname)
	  from pg_class as c join pg_namespace as n on n.oid = c.relnamespace
	 where n.nspname = $1 and c.relkind in ('r', 'p') and not c.relispartition order by c.relname`, schema)
	if err != nil {
		return nil, err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	for _, table := range tables {
		var empty bool
		if err := conn.QueryRow(ctx, "select not exists (select from "+table+")").Scan(&empty); err != nil {
			return nil, err
		}
		if empty {
			p.emptied = append(p.emptied, table)
			continue
		}
		if p.filled[table], err = contents(ctx, conn, table); err != nil {
			return nil, err
		}
	}
	if p.print, err = fingerprint(ctx, conn, schema); err != nil {
		return nil, err
	}
	return p, nil
}

// reset empties p's tables and drops the functions a test added, in one
// transaction (which waits, as a drop would, for the
// session of a killed process to end). It says whether the schema is then
// exactly as its migrate left it.
func reset(ctx context.Context, conn *pgx.Conn, p *pooled) (same bool, err error) {
	var exists bool
	if err := conn.QueryRow(ctx, "select exists (select from pg_namespace where nspname = $1)", p.name).Scan(&exists); err != nil || !exists {
		return false, err
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select p.oid::regprocedure::text from pg_proc as p
		  where p.pronamespace = $1::regnamespace and not p.oid::regprocedure::text = any ($2)`, p.name, p.functions)
		if err != nil {
			return err
		}
		added, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, f := range added {
			if _, err := tx.Exec(ctx, "drop routine "+f+" cascade"); err != nil {
				return err
			}
		}
		if len(p.emptied) > 0 {
			if _, err := tx.Exec(ctx, "truncate "+strings.Join(p.emptied, ", ")); err != nil {
				return err
			}
		}
		for table, want := range p.filled {
			got, err := contents(ctx, tx, table)
			if err != nil || got != want {
				return errors.Join(err, errDifferent)
			}
		}
		print, err := fingerprint(ctx, tx, p.name)
		if err == nil && print != p.print {
			err = errDifferent
		}
		return err
	})
	if errors.Is(err, errDifferent) {
		return false, nil
	}
	return err == nil, err
}

var errDifferent = errors.New("the schema differs from its migrate")

// querier is a connection or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// contents fingerprints the rows of table (a quoted name).
func contents(ctx context.Context, q querier, table string) (string, error) {
	var print string
	err := q.QueryRow(ctx, "select md5(coalesce(string_agg(t::text, e'\\n' order by t::text), '')) from "+table+" as t").Scan(&print)
	return print, err
}

// fingerprint is schema's catalog as far as a test could change it, with
// no object ids: what its migrate made and who may use it.
func fingerprint(ctx context.Context, q querier, schema string) (string, error) {
	var print string
	err := q.QueryRow(ctx, `
	  with n as (select oid, nspowner, nspacl from pg_namespace where nspname = $1),
	  rels as (select c.* from pg_class as c join n on c.relnamespace = n.oid),
	  writer as (select r.* from pg_roles as r where r.rolname = $1 || '_writer'),
	  parts(part) as (
	    select format('schema %s %s', nspowner::regrole, nspacl) from n
	    union all
	    select format('rel %s %s %s %s %s %s %s %s', c.relname, c.relkind, c.relowner::regrole, c.relacl, c.reloptions,
	                  c.relrowsecurity, c.relforcerowsecurity, c.relpersistence) from rels as c
	    union all
	    select format('col %s %s %s %s %s %s %s %s', c.relname, a.attnum, a.attname, a.atttypid::regtype, a.attnotnull,
	                  a.attidentity, a.attgenerated, a.attacl) || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
	      from rels as c join pg_attribute as a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
	      left join pg_attrdef as d on d.adrelid = c.oid and d.adnum = a.attnum
	    union all
	    select format('con %s %s %s', c.relname, k.conname, pg_get_constraintdef(k.oid)) from rels as c join pg_constraint as k on k.conrelid = c.oid
	    union all
	    select 'index ' || pg_get_indexdef(i.indexrelid) from rels as c join pg_index as i on i.indrelid = c.oid
	    union all
	    select 'trigger ' || pg_get_triggerdef(g.oid) from rels as c join pg_trigger as g on g.tgrelid = c.oid
	    union all
	    select format('policy %s %s %s %s %s %s', c.relname, p.polname, p.polcmd, p.polroles::regrole[], pg_get_expr(p.polqual, p.polrelid),
	                  pg_get_expr(p.polwithcheck, p.polrelid)) from rels as c join pg_policy as p on p.polrelid = c.oid
	    union all
	    select format('view %s %s', c.relname, pg_get_viewdef(c.oid)) from rels as c where c.relkind in ('v', 'm')
	    union all
	    select format('function %s %s %s %s %s %s %s %s', p.oid::regprocedure, md5(p.prosrc), p.proconfig, p.proacl, p.proowner::regrole,
	                  p.prosecdef, p.provolatile, p.proisstrict)
	      from pg_proc as p join n on p.pronamespace = n.oid
	    union all
	    select format('sequence %s %s', s.sequencename, s.last_value) from pg_sequences as s where s.schemaname = $1
	    union all
	    select format('type %s %s %s', t.typname, t.typtype, t.typowner::regrole) from pg_type as t join n on t.typnamespace = n.oid
	    union all
	    select format('default acl %s %s %s', d.defaclrole::regrole, d.defaclobjtype, d.defaclacl) from pg_default_acl as d join n on d.defaclnamespace = n.oid
	    union all
	    select format('writer %s %s %s %s %s %s', w.rolname, w.rolsuper, w.rolinherit, w.rolcreaterole, w.rolcanlogin, w.rolbypassrls) from writer as w
	    union all
	    select format('member %s %s', m.roleid::regrole, m.member::regrole) from pg_auth_members as m join writer as w on w.oid in (m.roleid, m.member)
	    union all
	    select format('role setting %s', s.setconfig) from pg_db_role_setting as s join writer as w on w.oid = s.setrole
	  )
	  select md5(string_agg(part, e'\n' order by part)) from parts`, schema).Scan(&print)
	return print, err
}

// reportPool says on stderr how many schemas the tests were given, and
// how: when most are dropped, the tests leave their schema different.
func reportPool() {
	if m := pool.migrated.Load(); m > 0 {
		fmt.Fprintf(os.Stderr, "pgtest: %d schemas migrated, %d handed out again, %d dropped as the test left them\n",
			m, pool.reused.Load(), pool.dropped.Load())
	}
}

// fresh is what [Fresh] knows of the schemas it made, by database and schema.
var fresh struct {
	mu      sync.Mutex
	schemas map[string]*pooled
}

// Fresh makes schema, in conn's database, exactly as a migrate leaves it
// (for a test that needs a chunks schema of a given name, as examples
// spell out): one that Fresh made before and that was left with nothing
// but rows and added functions is emptied; any other is dropped and
// migrated anew. conn must be idle.
func Fresh(ctx context.Context, conn *pgx.Conn, schema string) error {
	var db string
	if err := conn.QueryRow(ctx, "select current_database()").Scan(&db); err != nil {
		return err
	}
	key := db + "/" + schema
	fresh.mu.Lock()
	defer fresh.mu.Unlock()
	if p := fresh.schemas[key]; p != nil {
		if same, err := reset(ctx, conn, p); err != nil || same {
			return err
		}
	}
	if _, err := conn.Exec(ctx, "drop schema if exists "+pgx.Identifier{schema}.Sanitize()+" cascade"); err != nil {
		return err
	}
	if err := driver.Migrate(ctx, conn, schema, driver.MigrateOptions{}); err != nil {
		return err
	}
	p, err := pristine(ctx, conn, schema)
	if err != nil {
		return err
	}
	if fresh.schemas == nil {
		fresh.schemas = map[string]*pooled{}
	}
	fresh.schemas[key] = p
	return nil
}

// dropPool drops the schemas left in the pool when the tests end (on a
// server of $CHUNKS_TEST_DSN they would outlive the run).
func dropPool(dsn string) error {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if len(pool.free) == 0 {
		return nil
	}
	err := WithConn(dsn, func(conn *pgx.Conn) error {
		for _, p := range pool.free {
			if _, err := conn.Exec(context.Background(), "drop schema if exists "+pgx.Identifier{p.name}.Sanitize()+" cascade"); err != nil {
				return fmt.Errorf("drop pooled schema %s: %w", p.name, err)
			}
		}
		return nil
	})
	pool.free = nil
	return err
}
