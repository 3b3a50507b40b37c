package driver

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	chunkssql "github.com/chunks-dev/chunks/sql"
)

// schemaPattern is what Migrate accepts as a target schema: a lowercase
// identifier that needs no quoting anywhere (tern's version table name
// included), and not in the pg_ namespace that Postgres reserves.
var schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// CheckSchema returns an [ErrInvalid] naming "schema" unless schema is a
// lowercase identifier of at most 63 characters (letters, digits, _, not
// starting with a digit or pg_) other than public.
func CheckSchema(schema string) error {
	if !schemaPattern.MatchString(schema) || len(schema) >= 3 && schema[:3] == "pg_" || schema == "public" {
		return invalidf("schema: must be a lowercase identifier (a-z, 0-9, _; not pg_*, not public), got %q", schema)
	}
	return nil
}

// Migrate installs chunks into schema, or upgrades it: it creates the schema
// when missing, runs the tern migrations (tables; tern's version table is
// schema.schema_version) and installs the functions (CREATE OR REPLACE, so
// data, oids and grants stay). Running it again changes nothing. Many
// processes may run it at once: a session advisory lock on the schema's name
// serializes them (concurrent CREATE SCHEMA IF NOT EXISTS and CREATE OR
// REPLACE FUNCTION collide in the catalog otherwise). Nothing is created
// outside schema.
//
// conn must not be inside a transaction; tern resets its session settings.
func Migrate(ctx context.Context, conn *pgx.Conn, schema string) (err error) {
	if err := CheckSchema(schema); err != nil {
		return err
	}
	lockKey := "chunks migrate " + schema
	if _, err := conn.Exec(ctx, "select pg_advisory_lock(hashtextextended($1, 0))", lockKey); err != nil {
		return fmt.Errorf("migrate %s: lock: %w", schema, err)
	}
	defer func() {
		var unlocked bool
		uerr := conn.QueryRow(context.WithoutCancel(ctx),
			"select pg_advisory_unlock(hashtextextended($1, 0))", lockKey).Scan(&unlocked)
		if uerr == nil && !unlocked {
			uerr = errors.New("the advisory lock was not held")
		}
		if uerr != nil {
			err = errors.Join(err, fmt.Errorf("migrate %s: unlock: %w", schema, uerr))
		}
	}()

	if _, err := conn.Exec(ctx, "create schema if not exists "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("migrate %s: create schema: %w", schema, err)
	}
	data := map[string]any{"schema": schema}

	m, err := migrate.NewMigrator(ctx, conn, schema+".schema_version")
	if err != nil {
		return fmt.Errorf("migrate %s: %w", schema, err)
	}
	m.Data = data
	if err := m.LoadMigrations(chunkssql.Migrations()); err != nil {
		return fmt.Errorf("migrate %s: load migrations: %w", schema, err)
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate %s: %w", schema, err)
	}

	code, err := migrate.LoadCodePackage(chunkssql.Functions())
	if err != nil {
		return fmt.Errorf("migrate %s: load functions: %w", schema, err)
	}
	if err := migrate.InstallCodePackage(ctx, conn, data, code); err != nil {
		return fmt.Errorf("migrate %s: install functions: %w", schema, err)
	}
	return nil
}
