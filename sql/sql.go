// Package sql embeds the chunks SQL so the binary installs exactly the files in
// this folder: the tern migrations (tables) and the tern code package
// (functions). The tern CLI reads the same files from disk.
package sql

import (
	"embed"
	"io/fs"
)

//go:embed migrations/*.sql
var migrations embed.FS

//go:embed functions/*.sql
var functions embed.FS

// Migrations is the folder of tern migrations (NNN_name.sql), templated on
// {{ .schema }}.
func Migrations() fs.FS { return sub(migrations, "migrations") }

// Functions is the tern code package: install.sql and one file per function,
// templated on {{ .schema }}.
func Functions() fs.FS { return sub(functions, "functions") }

func sub(fsys embed.FS, dir string) fs.FS {
	s, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // dir is a constant that go:embed has already proven to exist
	}
	return s
}
