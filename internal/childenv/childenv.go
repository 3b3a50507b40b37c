// Package childenv is the environment of a chunks process that chunks
// itself starts (the demo's drains and crash drill, the benchmark's
// workers and drain). The connection string travels there, never in the
// child's argv, which anyone on the machine can read (ps,
// /proc/PID/cmdline); a process's environment is readable by its own user
// only.
package childenv

import (
	"os"
	"strings"
)

// Env is this process's environment with CHUNKS_DSN set to dsn and
// CHUNKS_SCHEMA to schema, and DATABASE_URL removed, so the child connects
// where its parent says whatever the parent's environment holds.
func Env(dsn, schema string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "CHUNKS_DSN" && name != "DATABASE_URL" && name != "CHUNKS_SCHEMA" {
			env = append(env, kv)
		}
	}
	return append(env, "CHUNKS_DSN="+dsn, "CHUNKS_SCHEMA="+schema)
}
