// Package sql embeds the chunks SQL so the binary installs exactly the files in
// this folder: the tern migrations (tables), the tern code package
// (functions) and the router's code package (the routing functions of a
// router database, installed by chunks router install). The tern CLI reads
// the first two from disk.
package sql

import (
	"embed"
	"io/fs"
	"path"
	"testing/fstest"
)

//go:embed migrations/*.sql
var migrations embed.FS

//go:embed functions
var functions embed.FS

// Migrations is the folder of tern migrations (NNN_name.sql), templated on
// {{ .schema }}.
func Migrations() fs.FS { return sub(migrations, "migrations") }

// Functions is the tern code package: install.sql and one file per function
// in a folder per area (contract/, changes/, queue/, campaigns/, undo/,
// status/, roles/, common/; docs/layout.md), templated on {{ .schema }}.
func Functions() fs.FS { return sub(functions, "functions") }

//go:embed router/*.sql
var router embed.FS

// Router is the router's tern code package: install.sql and one file per
// routed call, templated on {{ .schema }} (the router's schema),
// {{ .shard_schema }} (the shards' chunks schema) and {{ .cluster }} (the
// PL/Proxy cluster). It holds limits.sql and validate.sql of [Functions]
// too, the same files, for the routing functions' input checks.
func Router() fs.FS {
	files := fstest.MapFS{}
	add := func(fsys embed.FS, name string) {
		data, err := fsys.ReadFile(name)
		if err != nil {
			panic(err) // name comes from go:embed's own listing
		}
		files[path.Base(name)] = &fstest.MapFile{Data: data, Mode: 0o444}
	}
	entries, err := router.ReadDir("router")
	if err != nil {
		panic(err) // go:embed has already proven the folder exists
	}
	for _, e := range entries {
		add(router, "router/"+e.Name())
	}
	add(functions, "functions/common/limits.sql")
	add(functions, "functions/common/validate.sql")
	return files
}

func sub(fsys embed.FS, dir string) fs.FS {
	s, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // dir is a constant that go:embed has already proven to exist
	}
	return s
}
