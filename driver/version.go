package driver

import (
	"io/fs"
	"strconv"
	"strings"

	chunkssql "github.com/chunks-dev/chunks/sql"
)

// SchemaVersion is the schema version this binary installs: the number of
// its last embedded migration (sql/migrations/NNN_name.sql), which
// [Migrate] leaves in SCHEMA.schema_version (tern's version table). A
// database whose schema_version is lower needs chunks migrate; a higher
// one was migrated by a newer binary.
func SchemaVersion() int {
	files, err := fs.ReadDir(chunkssql.Migrations(), ".")
	if err != nil {
		panic(err) // the folder is embedded: go:embed has proven it exists
	}
	version := 0
	for _, f := range files {
		prefix, _, _ := strings.Cut(f.Name(), "_")
		if n, err := strconv.Atoi(prefix); err == nil && n > version {
			version = n
		}
	}
	return version
}
