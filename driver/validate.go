package driver

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// CheckJobID returns an [ErrInvalid] naming job_id unless jobID is 1 to 64
// ASCII letters, digits, _ or -: the check every operation on a job makes
// first, for callers that want it before opening a connection.
func CheckJobID(jobID string) error { return checkName("job_id", jobID) }

// CheckTenant returns an [ErrInvalid] naming "tenant" unless tenant is 1 to
// 64 ASCII letters, digits, _ or -. It needs no database.
func CheckTenant(tenant string) error { return checkName("tenant", tenant) }

// checkName enforces the job_id / tenant rule: 1 to 64 ASCII letters,
// digits, _ or -. The length is counted in characters, as the message says
// and as the SQL face counts, not in bytes.
func checkName(field, value string) error {
	if n := utf8.RuneCountInString(value); n == 0 || n > MaxNameLen {
		return Invalidf("%s: must be 1 to %d ASCII letters, digits, _ or -, got %d characters", field, MaxNameLen, n)
	}
	for i := 0; i < len(value); i++ {
		c := value[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return Invalidf("%s: must be 1 to %d ASCII letters, digits, _ or -, got %s", field, MaxNameLen, Excerpt(value, true))
		}
	}
	return nil
}

// checkChunkSize checks a chunk_size against 1 to max (MaxChunkSize for
// orders, MaxChangeChunkSize for a declared change).
func checkChunkSize(n, max int64) error {
	if n < MinChunkSize || n > max {
		return Invalidf("chunk_size: must be between %d and %d, got %d", MinChunkSize, max, n)
	}
	return nil
}

func checkMaxChunks(n int) error {
	if n < 1 || n > MaxMaxChunks {
		return Invalidf("max_chunks: must be between 1 and %d, got %d", MaxMaxChunks, n)
	}
	return nil
}

// normalize checks a target list (field names it in errors) and returns a
// new list sorted by id.
func normalize(field string, items []Target) ([]Target, error) {
	if len(items) == 0 || len(items) > MaxTargets {
		return nil, Invalidf("%s: must be a list of 1 to %d targets, got %d", field, MaxTargets, len(items))
	}
	for i, t := range items {
		for j, v := range []int64{t.ID, t.Revision, t.Qty} {
			if f := targetFields[j]; v < f.min || v > f.max {
				return nil, Invalidf("%s[%d].%s: must be between %d and %d, got %d", field, i, f.name, f.min, f.max, v)
			}
		}
	}
	out := slices.Clone(items)
	slices.SortFunc(out, func(a, b Target) int { return cmpInt64(a.ID, b.ID) })
	for i := 1; i < len(out); i++ {
		if out[i].ID == out[i-1].ID {
			return nil, Invalidf("%s: duplicate id %d", field, out[i].ID)
		}
	}
	return out, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Manifest validates an approval (docs/contract.md §3) and returns it as a new
// [Plan] whose Targets are a sorted copy of items: changing one never
// changes the other. It needs no database.
//
// The contract (docs/contract.md §6) fixes its name and signature.
func Manifest(jobID, tenant string, items []Target, chunkSize int, allowPartial bool) (Plan, error) {
	if err := checkName("job_id", jobID); err != nil {
		return Plan{}, err
	}
	if err := checkName("tenant", tenant); err != nil {
		return Plan{}, err
	}
	targets, err := normalize("items", items)
	if err != nil {
		return Plan{}, err
	}
	if err := checkChunkSize(int64(chunkSize), MaxChunkSize); err != nil {
		return Plan{}, err
	}
	if !allowPartial {
		return Plan{}, Invalidf("allow_partial: must be true (each chunk commits on its own), got false")
	}
	return Plan{JobID: jobID, Tenant: tenant, Targets: targets, ChunkSize: chunkSize, AllowPartial: true}, nil
}

// describe is how a refused JSON value is shown in an error.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return "string " + Excerpt(v, true)
	case bool:
		return fmt.Sprintf("boolean %t", v)
	case *object:
		return "object"
	case []any:
		return "list"
	}
	return Excerpt(fmt.Sprint(v), false) // a json.Number: its text
}

// checkNUL returns an [ErrInvalid] naming path when s holds U+0000:
// PostgreSQL text, and so jsonb, cannot store it (the server would refuse
// the whole value with a raw SQLSTATE 22P05).
func checkNUL(path, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return Invalidf(`%s: must not contain \u0000 (PostgreSQL text cannot store it)`, Excerpt(path, false))
	}
	return nil
}

// checkNULs is checkNUL for every key and text in v, a value as
// encoding/json decodes one (objects as map[string]any), keys in order:
// "targets[0].reason", or "set: key ..." for a key.
func checkNULs(path string, v any) error {
	switch v := v.(type) {
	case string:
		return checkNUL(path, v)
	case []any:
		for i, e := range v {
			if err := checkNULs(fmt.Sprintf("%s[%d]", path, i), e); err != nil {
				return err
			}
		}
	case map[string]any:
		keys := slices.Sorted(maps.Keys(v))
		for _, k := range keys {
			if strings.IndexByte(k, 0) >= 0 {
				return Invalidf(`%s: key %s must not contain \u0000 (PostgreSQL text cannot store it)`, Excerpt(path, false), Excerpt(k, true))
			}
			if err := checkNULs(path+"."+k, v[k]); err != nil {
				return err
			}
		}
	}
	return nil
}
