package driver

// The limits of docs/contract.md §3, in one table for all of the Go
// validation. The SQL functions hold the same numbers; tests/limits_test.go
// states the contract's numbers and proves that both faces accept every edge
// and refuse one step past it, so neither can drift from the contract
// unnoticed.
const (
	MaxNameLen   = 64 // job_id and tenant: 1 to 64 of [A-Za-z0-9_-]
	MaxTargets   = 64 // a target list has 1 to 64 entries
	MinChunkSize = 1
	MaxChunkSize = 10
	MaxMaxChunks = 64 // drain's max_chunks is 1 to 64

	// MaxInputBytes bounds a plan or a target list as JSON text (1 MiB). 64
	// targets take a few kilobytes; the bound keeps a hostile input from
	// costing seconds and gigabytes before it is refused.
	MaxInputBytes = 1 << 20
)

// targetFields are the keys of a target, with their inclusive ranges.
var targetFields = []struct {
	name     string
	min, max int64
}{
	{"id", 1, 2147483647},
	{"revision", 0, 2147483646},
	{"qty", 1, 1000},
}

// planKeys are the keys of a plan, in the order they are checked.
var planKeys = []string{"job_id", "tenant", "targets", "chunk_size", "allow_partial"}
