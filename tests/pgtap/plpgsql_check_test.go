package pgtap

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestPlpgsqlCheck runs plpgsql_check's static analysis on every PL/pgSQL
// function of a fresh chunks schema, helpers included, and fails listing
// each error or warning it reports. All kinds of warning are on (other,
// extra, security, compatibility) except performance hints.
//
// The check runs on a connection whose search_path is only pg_catalog:
// plpgsql_check applies each function's own SET search_path, so an
// unqualified name that the function could not resolve at run time is
// reported here too.
//
// Without the extension the test is skipped, or fails under CI
// ([pgtest.RequireTool]). The CI version matrix leaves this test out (-skip):
// plpgsql_check is built for the machine's Debian PostgreSQL only.
func TestPlpgsqlCheck(t *testing.T) {
	s := pgtest.NewSchema(t)
	check := installExtension(t, s.Conn, "plpgsql_check", "chunks_test_check", "postgresql-%d-plpgsql-check")
	// A declared change (docs/your-own-tables.md), so that its generated
	// function is checked too, on a table of a schema of the test's own.
	shop := pgtest.NewSchemaName(t)
	t.Cleanup(func() {
		if _, err := s.Conn.Exec(ctx, "drop schema "+shop+" cascade"); err != nil {
			t.Errorf("drop schema %s: %v", shop, err)
		}
	})
	s.Exec(t, "create schema "+shop)
	s.Exec(t, `create table `+shop+`.payments(payment_id bigint primary key, merchant_id integer not null, status text not null,
	  amount_cents integer not null, hold_reason text, lock_version integer not null)`)
	// The writer reads and writes it (docs/roles.md "Code on your tables").
	s.Exec(t, `do $g$ declare w text := (select quote_ident(role) from change_writer); begin
	  execute format('grant usage on schema %1$I to %2$s; grant select, update on %1$I.payments to %2$s', '`+shop+`', w);
	end $g$`)
	s.Exec(t, `select define_change(jsonb_build_object('name', 'hold_payment', 'table', $1::text, 'key', 'payment_id',
	  'tenant', 'merchant_id', 'version', 'lock_version', 'expect', jsonb_build_array('amount_cents'),
	  'when', jsonb_build_object('status', 'captured'), 'set', jsonb_build_object('status', 'on_hold'),
	  'set_from_target', jsonb_build_object('hold_reason', 'reason')))`, shop+".payments")
	conn := pgtest.Connect(t, pgtest.WithSearchPath(pgtest.DSN(), "pg_catalog"))

	rows, err := conn.Query(ctx, `
		select p.oid::regprocedure::text, p.proname::text
		  from pg_proc as p
		  join pg_language as l on l.oid = p.prolang
		 where p.pronamespace = $1::regnamespace and l.lanname = 'plpgsql'
		 order by 1`, s.Name)
	if err != nil {
		t.Fatalf("list functions: %v", err)
	}
	type function struct{ Signature, Name string }
	functions, err := pgx.CollectRows(rows, pgx.RowToStructByPos[function])
	if err != nil {
		t.Fatalf("list functions: %v", err)
	}
	var names []string
	for _, f := range functions {
		names = append(names, f.Name)
	}
	for _, want := range []string{"register", "inspect_job", "cancel_chunk", "run_chunk", "report", "apply_hold_payment"} {
		if !slices.Contains(names, want) {
			t.Fatalf("no PL/pgSQL function %s in schema %s (found %v): nothing to check", want, s.Name, names)
		}
	}

	rows, err = conn.Query(ctx, `
		select p.oid::regprocedure::text, r.lineno, r.level, r.sqlstate, r.message,
		       r.detail, r.hint, r.statement, r.query, r.context
		  from pg_proc as p
		  join pg_language as l on l.oid = p.prolang
		 cross join lateral `+check+`.plpgsql_check_function_tb(p.oid,
		         -- a trigger function (refuse_rewrite) is checked on a table it is on
		         relid => case when p.prorettype = 'trigger'::regtype
		                       then (select min(t.tgrelid) from pg_trigger as t where t.tgfoid = p.oid) else 0 end,
		         fatal_errors => false,
		         other_warnings => true,
		         extra_warnings => true,
		         performance_warnings => false,
		         security_warnings => true,
		         compatibility_warnings => true) as r
		 where p.pronamespace = $1::regnamespace and l.lanname = 'plpgsql'
		 order by p.oid::regprocedure::text, r.lineno`, s.Name)
	if err != nil {
		t.Fatalf("plpgsql_check: %v", err)
	}
	type finding struct {
		Function                        string
		Line                            *int32
		Level                           string
		SQLState, Message, Detail, Hint *string
		Statement, Query, Context       *string
	}
	findings, err := pgx.CollectRows(rows, pgx.RowToStructByPos[finding])
	if err != nil {
		t.Fatalf("plpgsql_check: %v", err)
	}
	if len(findings) > 0 {
		var b strings.Builder
		for _, f := range findings {
			fmt.Fprintf(&b, "\n%s", f.Function)
			if f.Line != nil {
				fmt.Fprintf(&b, " line %d", *f.Line)
			}
			fmt.Fprintf(&b, ": %s: %s", f.Level, text(f.Message))
			for _, part := range []struct {
				label string
				value *string
			}{{"sqlstate", f.SQLState}, {"statement", f.Statement}, {"query", f.Query},
				{"detail", f.Detail}, {"hint", f.Hint}, {"context", f.Context}} {
				if v := text(part.value); v != "" && v != "00000" {
					fmt.Fprintf(&b, "\n    %s: %s", part.label, v)
				}
			}
		}
		t.Fatalf("plpgsql_check reported %d problems in schema %s:%s", len(findings), s.Name, b.String())
	}
	t.Logf("plpgsql_check: no errors or warnings in %d functions: %s", len(functions), strings.Join(names, ", "))
}

func text(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
