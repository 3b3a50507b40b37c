package fleet

import (
	"context"
	"fmt"

	"github.com/chunks-dev/chunks/driver"
)

// SchemaVersions compares the schema version of the database (SQL
// installed_version()) with the one this binary installs
// ([driver.SchemaVersion]), as chunks status, /readyz and a starting
// worker say it.
type SchemaVersions struct {
	Binary int `json:"binary"` // the version this binary installs
	// Database is the database's version; nil when it cannot say: an
	// installation from before installed_version() (older than every
	// binary that asks), or a chunks router, which keeps no schema of its
	// own (each shard has its version).
	Database *int `json:"database"`
	// Compare is how the database's version compares with the binary's:
	// "same", "older" (run chunks migrate), "newer" (a newer binary
	// migrated it) or "router" (not compared).
	Compare string `json:"compare"`
}

// LoadSchemaVersions reads the database's schema version on db (whose
// search_path reaches chunks, or a chunks router) and compares it with
// this binary's. It reads only.
func LoadSchemaVersions(ctx context.Context, db driver.DB) (SchemaVersions, error) {
	v := SchemaVersions{Binary: driver.SchemaVersion()}
	// Two queries: a call of a function that does not exist fails as the
	// statement is parsed, whatever a CASE around it says.
	var installed, router bool
	if err := db.QueryRow(ctx, `select to_regprocedure('installed_version()') is not null,
	    to_regprocedure('shard_of(text)') is not null`).Scan(&installed, &router); err != nil {
		return v, fmt.Errorf("schema version: %w", err)
	}
	if installed {
		if err := db.QueryRow(ctx, "select installed_version()").Scan(&v.Database); err != nil {
			return v, fmt.Errorf("schema version: %w", err)
		}
	}
	switch {
	case router && v.Database == nil:
		v.Compare = "router"
	case v.Database == nil || *v.Database < v.Binary:
		v.Compare = "older"
	case *v.Database > v.Binary:
		v.Compare = "newer"
	default:
		v.Compare = "same"
	}
	return v, nil
}

// String says how the versions differ, naming both and what to do; ""
// when they are the same (or not compared, through a router).
func (v SchemaVersions) String() string {
	db := "has no installed_version()"
	if v.Database != nil {
		db = fmt.Sprintf("is version %d", *v.Database)
	}
	switch v.Compare {
	case "older":
		return fmt.Sprintf("the database's chunks schema %s, older than this binary's %d: run chunks migrate (with this binary)", db, v.Binary)
	case "newer":
		return fmt.Sprintf("the database's chunks schema %s, newer than this binary's %d: a newer chunks migrated it; upgrade this binary", db, v.Binary)
	}
	return ""
}
