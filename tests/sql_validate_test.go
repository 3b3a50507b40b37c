package tests

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// docs/contract.md §3 at the SQL face. Every refusal is 22023 with a message that
// starts with the field it is about, and writes nothing.
//
// What jsonb hides: the SQL functions receive jsonb, which the server has
// already parsed. '1e3'::jsonb is the number 1000 and '1e1'::jsonb is 10
// (their jsonb text is a plain integer, so the SQL face accepts them as
// integers, while the Go and CLI faces refuse the raw text 1e3), and an object
// with a duplicate key keeps only the last value. '1.0'::jsonb stays 1.0 and is
// refused. The cases named "jsonb ..." below pin that behaviour down.

// badName is a job_id or tenant that §3 refuses, with the end of the message.
type badName struct{ name, value, got string }

var badNames = []badName{
	{"empty", "", `""`},
	{"65 characters", strings.Repeat("a", 65), "65 characters"},
	{"65 characters of every class", long64 + "a", "65 characters"},
	{"space", "a b", `"a b"`},
	{"leading space is not trimmed", " a", `" a"`},
	{"trailing newline", "a\n", `"a\n"`},
	{"e acute", "é", `"é"`},
	{"dot", "a.b", `"a.b"`},
	{"slash", "a/b", `"a/b"`},
	{"quote", "a'b", `"a'b"`},
}

var goodNames = []string{"a", "Z", "0", "_", "-", long64}

// listCase is a target list (raw JSON) and, when refused, the exact message
// with %[1]s standing for the list's field name.
type listCase struct{ name, list, msg string }

// numField is a numeric field of a target and its inclusive range.
type numField struct {
	name   string
	lo, hi int64
}

var targetFields = []numField{{"id", 1, 2147483647}, {"revision", 0, 2147483646}, {"qty", 1, 1000}}

// withField is entry 1/3/2 with field set to raw.
func withField(field, raw string) string {
	v := map[string]string{"id": "1", "revision": "3", "qty": "2"}
	v[field] = raw
	return entry(v["id"], v["revision"], v["qty"])
}

// notIntegers are JSON values that are not integers, as jsonb prints them.
var notIntegers = []string{`"1"`, `true`, `false`, `null`, `1.0`, `1.5`, `{}`, `[]`, `[1]`}

// listRefusals are the refused target lists, the same for register's
// "targets" and cancel_chunk's "items".
func listRefusals() []listCase {
	cases := []listCase{
		{"not a list: object", `{"id": 1, "revision": 3, "qty": 2}`, "%[1]s: must be a list of 1 to 64 targets, got object"},
		{"not a list: string", `"[]"`, "%[1]s: must be a list of 1 to 64 targets, got string"},
		{"not a list: number", `1`, "%[1]s: must be a list of 1 to 64 targets, got number"},
		{"not a list: json null", `null`, "%[1]s: must be a list of 1 to 64 targets, got null"},
		{"0 entries", `[]`, "%[1]s: must be a list of 1 to 64 targets, got 0"},
		{"65 entries", targets(1, 65), "%[1]s: must be a list of 1 to 64 targets, got 65"},
		{"entry is a number", list(entry("1", "3", "2"), `2`), "%[1]s[1]: must be an object with the keys id, revision, qty, got number"},
		{"entry is null", `[null]`, "%[1]s[0]: must be an object with the keys id, revision, qty, got null"},
		{"entry is a list", `[[1, 3, 2]]`, "%[1]s[0]: must be an object with the keys id, revision, qty, got array"},
		{"entry with an extra key", `[{"id": 1, "revision": 3, "qty": 2, "note": "x"}]`,
			`%[1]s[0]: must have exactly the keys id, revision, qty, got {"id": 1, "qty": 2, "note": "x", "revision": 3}`},
		{"entry without id", list(entry("", "3", "2")), `%[1]s[0]: must have exactly the keys id, revision, qty, got {"qty": 2, "revision": 3}`},
		{"entry without revision", list(entry("1", "", "2")), `%[1]s[0]: must have exactly the keys id, revision, qty, got {"id": 1, "qty": 2}`},
		{"entry without qty", list(entry("1", "3", "")), `%[1]s[0]: must have exactly the keys id, revision, qty, got {"id": 1, "revision": 3}`},
		{"entry with a key in another case", `[{"ID": 1, "revision": 3, "qty": 2}]`,
			`%[1]s[0]: must have exactly the keys id, revision, qty, got {"ID": 1, "qty": 2, "revision": 3}`},
		{"empty entry", `[{}]`, `%[1]s[0]: must have exactly the keys id, revision, qty, got {}`},
		{"duplicate id", list(entry("1", "3", "2"), entry("2", "3", "2"), entry("1", "3", "2")), "%[1]s: duplicate id 1"},
		{"duplicate id with other values", list(entry("7", "3", "2"), entry("7", "4", "5")), "%[1]s: duplicate id 7"},
		{"jsonb duplicate id written as 7e0", list(entry("7", "3", "2"), entry("7e0", "3", "2")), "%[1]s: duplicate id 7"},
		{"bad entry after good ones", list(entry("1", "3", "2"), entry("2", "3", "2"), entry("3", "3", "0")),
			"%[1]s[2].qty: must be between 1 and 1000, got 0"},
	}
	for _, f := range targetFields {
		for _, v := range []int64{f.lo - 1, f.hi + 1} {
			cases = append(cases, listCase{fmt.Sprintf("%s %d", f.name, v), list(withField(f.name, fmt.Sprint(v))),
				fmt.Sprintf("%%[1]s[0].%s: must be between %d and %d, got %d", f.name, f.lo, f.hi, v)})
		}
		for _, raw := range notIntegers {
			cases = append(cases, listCase{fmt.Sprintf("%s %s", f.name, raw), list(withField(f.name, raw)),
				fmt.Sprintf("%%[1]s[0].%s: must be an integer, got %s", f.name, raw)})
		}
	}
	cases = append(cases,
		listCase{"jsonb id 1e10 is an integer out of range", list(withField("id", "1e10")),
			"%[1]s[0].id: must be between 1 and 2147483647, got 10000000000"},
		listCase{"jsonb qty 1e4 is an integer out of range", list(withField("qty", "1e4")),
			"%[1]s[0].qty: must be between 1 and 1000, got 10000"},
		listCase{"jsonb qty 1.0e0 keeps its fraction", list(withField("qty", "1.0e0")),
			"%[1]s[0].qty: must be an integer, got 1.0"},
		listCase{"huge id", list(withField("id", "99999999999999999999999")),
			"%[1]s[0].id: must be between 1 and 2147483647, got 99999999999999999999999"},
	)
	return cases
}

// listAccepted are valid one-entry lists and their normalized form.
var listAccepted = []struct{ name, list, stored string }{
	{"id 1", list(withField("id", "1")), `[{"id": 1, "revision": 3, "qty": 2}]`},
	{"id 2147483647", list(withField("id", "2147483647")), `[{"id": 2147483647, "revision": 3, "qty": 2}]`},
	{"revision 0", list(withField("revision", "0")), `[{"id": 1, "revision": 0, "qty": 2}]`},
	{"revision 2147483646", list(withField("revision", "2147483646")), `[{"id": 1, "revision": 2147483646, "qty": 2}]`},
	{"qty 1", list(withField("qty", "1")), `[{"id": 1, "revision": 3, "qty": 1}]`},
	{"qty 1000", list(withField("qty", "1000")), `[{"id": 1, "revision": 3, "qty": 1000}]`},
	// jsonb has already turned 1e3 into 1000: the SQL face cannot tell it from 1000.
	{"jsonb qty 1e3", list(withField("qty", "1e3")), `[{"id": 1, "revision": 3, "qty": 1000}]`},
	{"jsonb id 2.147483647E9", list(withField("id", "2.147483647E9")), `[{"id": 2147483647, "revision": 3, "qty": 2}]`},
	{"jsonb revision -0", list(withField("revision", "-0")), `[{"id": 1, "revision": 0, "qty": 2}]`},
	{"1 entry", targets(5, 1), `[{"id": 5, "revision": 3, "qty": 2}]`},
	{"64 entries, reversed", reversed(1, 64), targets(1, 64)},
}

// reversed is targets(first, n) in descending id order.
func reversed(first, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = entry(fmt.Sprint(first+n-1-i), "3", "2")
	}
	return list(parts...)
}

func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestSQLValidateRegister(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	// Something to keep: a refusal must leave all of this as it is.
	registerJob(t, s, "kept", "acme", 1, 3, 2)
	s.Exec(t, "select run_chunk('kept')")

	type refusal struct{ name, plan, msg string }
	var cases []refusal
	add := func(name, plan, msg string) { cases = append(cases, refusal{name, plan, msg}) }

	for _, raw := range []string{`[]`, `"plan"`, `1`, `true`, `null`} {
		typ := map[string]string{`[]`: "array", `"plan"`: "string", `1`: "number", `true`: "boolean", `null`: "null"}[raw]
		add("plan is "+raw, raw,
			"plan: must be an object with the keys job_id, tenant, targets, chunk_size, allow_partial, got "+typ)
	}
	add("plan is an empty object", `{}`, `plan: missing key "job_id"`)
	add("unexpected key", planWith(map[string]string{"extra": "1"}), `plan: unexpected key "extra"`)
	add("unexpected keys: the first by name", planWith(map[string]string{"zz": "1", "aa": "1"}), `plan: unexpected key "aa"`)
	add("key in another case", planWith(map[string]string{"job_id": "", "Job_id": `"v"`}), `plan: unexpected key "Job_id"`)
	add("max_chunks is not a plan key", planWith(map[string]string{"max_chunks": "1"}), `plan: unexpected key "max_chunks"`)
	for _, k := range planKeys {
		add("missing "+k, planWith(map[string]string{k: ""}), fmt.Sprintf("plan: missing key %q", k))
	}

	for _, field := range []string{"job_id", "tenant"} {
		for _, raw := range []string{`1`, `null`, `true`, `["v"]`, `{"v": 1}`} {
			typ := map[string]string{`1`: "number", `null`: "null", `true`: "boolean", `["v"]`: "array", `{"v": 1}`: "object"}[raw]
			add(field+" is "+raw, planWith(map[string]string{field: raw}), field+": must be a string, got "+typ)
		}
		for _, b := range badNames {
			add(field+" "+b.name, planWith(map[string]string{field: jsonString(b.value)}), field+": "+nameRule+", got "+b.got)
		}
	}

	for _, c := range listRefusals() {
		add("targets "+c.name, planWith(map[string]string{"targets": c.list}), fmt.Sprintf(c.msg, "targets"))
	}

	for _, raw := range []string{"0", "11", "-1", "2147483648", "1e2"} {
		got := map[string]string{"1e2": "100"}[raw]
		if got == "" {
			got = raw
		}
		add("chunk_size "+raw, planWith(map[string]string{"chunk_size": raw}), "chunk_size: must be between 1 and 10, got "+got)
	}
	for _, raw := range append(slices.Clone(notIntegers), "10.0", `"10"`) {
		add("chunk_size "+raw, planWith(map[string]string{"chunk_size": raw}), "chunk_size: must be an integer, got "+raw)
	}

	for _, raw := range []string{"false", `"true"`, "1", "0", "null", `"yes"`, "[true]", `{"v": true}`} {
		add("allow_partial "+raw, planWith(map[string]string{"allow_partial": raw}),
			"allow_partial: must be true (each chunk commits on its own), got "+raw)
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			refuse(t, s, "22023", c.msg, "select register($1)::text", c.plan)
		})
	}
	t.Run("SQL NULL plan", func(t *testing.T) {
		refuse(t, s, "22023", "plan: must be an object with the keys job_id, tenant, targets, chunk_size, allow_partial, got null",
			"select register($1)::text", nil)
	})

	// The accepted edges: each registers its own job, stored normalized.
	type accepted struct{ name, plan, want string }
	var oks []accepted
	for i, name := range goodNames {
		job := fmt.Sprintf("name-%d", i)
		oks = append(oks,
			accepted{"job_id " + name, planWith(map[string]string{"job_id": jsonString(name)}),
				fmt.Sprintf(`{"job_id": %s, "tenant": "acme", "targets": %s, "chunk_size": 2, "next_index": 0}`, jsonString(name), targets(1, 2))},
			accepted{"tenant " + name, planWith(map[string]string{"job_id": jsonString(job), "tenant": jsonString(name)}),
				fmt.Sprintf(`{"job_id": %q, "tenant": %s, "targets": %s, "chunk_size": 2, "next_index": 0}`, job, jsonString(name), targets(1, 2))})
	}
	for i, c := range listAccepted {
		job := fmt.Sprintf("list-%d", i)
		oks = append(oks, accepted{"targets " + c.name, planWith(map[string]string{"job_id": jsonString(job), "targets": c.list}),
			fmt.Sprintf(`{"job_id": %q, "tenant": "acme", "targets": %s, "chunk_size": 2, "next_index": 0}`, job, c.stored)})
	}
	for _, c := range []struct{ raw, stored string }{{"1", "1"}, {"10", "10"}, {"1e1", "10"}, {"10E0", "10"}, {"1.0e1", "10"}} {
		job := "chunk-" + strings.ReplaceAll(c.raw, ".", "_")
		oks = append(oks, accepted{"chunk_size " + c.raw, planWith(map[string]string{"job_id": jsonString(job), "chunk_size": c.raw}),
			fmt.Sprintf(`{"job_id": %q, "tenant": "acme", "targets": %s, "chunk_size": %s, "next_index": 0}`, job, targets(1, 2), c.stored)})
	}
	// jsonb keeps the last of duplicate keys: the first chunk_size (0) and the
	// first targets (empty) never reach the function.
	oks = append(oks, accepted{"jsonb duplicate keys keep the last",
		`{"job_id": "dup", "tenant": "acme", "targets": [], "chunk_size": 0, "allow_partial": false,
		  "targets": [{"id": 9, "revision": 3, "qty": 2}], "chunk_size": 3, "allow_partial": true}`,
		`{"job_id": "dup", "tenant": "acme", "targets": [{"id": 9, "revision": 3, "qty": 2}], "chunk_size": 3, "next_index": 0}`})
	oks = append(oks, accepted{"keys in any order",
		`{"allow_partial": true, "chunk_size": 4, "targets": [{"qty": 2, "revision": 3, "id": 8}], "tenant": "acme", "job_id": "order"}`,
		`{"job_id": "order", "tenant": "acme", "targets": [{"id": 8, "revision": 3, "qty": 2}], "chunk_size": 4, "next_index": 0}`})

	for _, c := range oks {
		t.Run("accepted "+c.name, func(t *testing.T) {
			if got := pgtest.MustString(t, s.Conn, "select register($1)::text", c.plan); got != "true" {
				t.Fatalf("register %s: got %s, want true", c.plan, got)
			}
			var job struct {
				JobID string `json:"job_id"`
			}
			if err := json.Unmarshal([]byte(c.want), &job); err != nil {
				t.Fatal(err)
			}
			sameJSON(t, "inspect_job", pgtest.MustString(t, s.Conn, "select inspect_job($1)::text", job.JobID), c.want)
		})
	}
}

func TestSQLValidateCancelChunk(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	// Orders 1 and 2 match the items every refusal is built from: a refusal
	// that slipped through would cancel them.
	seedOrders(t, s, "acme", 1, 3)
	registerJob(t, s, "kept", "acme", 50, 3, 2)
	s.Exec(t, "select run_chunk('kept')")
	good := list(entry("1", "3", "2"), entry("2", "3", "2"))

	for _, b := range badNames {
		t.Run("tenant "+b.name, func(t *testing.T) {
			refuse(t, s, "22023", "tenant: "+nameRule+", got "+b.got, "select cancel_chunk($1, $2)::text", b.value, good)
		})
	}
	t.Run("tenant SQL NULL", func(t *testing.T) {
		refuse(t, s, "22023", "tenant: "+nameRule+", got null", "select cancel_chunk($1, $2)::text", nil, good)
	})
	t.Run("tenant is checked before items", func(t *testing.T) {
		refuse(t, s, "22023", "tenant: "+nameRule+`, got "a b"`, "select cancel_chunk($1, $2)::text", "a b", `[]`)
	})
	for _, c := range listRefusals() {
		t.Run("items "+c.name, func(t *testing.T) {
			refuse(t, s, "22023", fmt.Sprintf(c.msg, "items"), "select cancel_chunk($1, $2)::text", "acme", c.list)
		})
	}
	t.Run("items SQL NULL", func(t *testing.T) {
		refuse(t, s, "22023", "items: must be a list of 1 to 64 targets, got null", "select cancel_chunk($1, $2)::text", "acme", nil)
	})
}

// The accepted edges of cancel_chunk, each against an order that has exactly
// the approved values.
func TestSQLValidateCancelChunkAccepted(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	s.Exec(t, `insert into orders(id, tenant, qty, state, revision) values
	  (1, 'acme', 2, 'pending', 3), (2147483647, 'acme', 2, 'pending', 3),
	  (10, 'acme', 2, 'pending', 0), (11, 'acme', 2, 'pending', 2147483646),
	  (12, 'acme', 1, 'pending', 3), (13, 'acme', 1000, 'pending', 3), (14, 'acme', 1000, 'pending', 3),
	  (15, $1, 2, 'pending', 3), (16, 'a', 2, 'pending', 3)`, long64)
	seedOrders(t, s, "acme", 100, 64)

	cases := []struct{ name, tenant, items, want string }{
		{"id 1", "acme", list(entry("1", "3", "2")), `[{"id": 1, "previous_revision": 3, "new_revision": 4, "qty": 2}]`},
		{"id 2147483647", "acme", list(entry("2147483647", "3", "2")),
			`[{"id": 2147483647, "previous_revision": 3, "new_revision": 4, "qty": 2}]`},
		{"revision 0", "acme", list(entry("10", "0", "2")), `[{"id": 10, "previous_revision": 0, "new_revision": 1, "qty": 2}]`},
		{"revision 2147483646", "acme", list(entry("11", "2147483646", "2")),
			`[{"id": 11, "previous_revision": 2147483646, "new_revision": 2147483647, "qty": 2}]`},
		{"qty 1", "acme", list(entry("12", "3", "1")), `[{"id": 12, "previous_revision": 3, "new_revision": 4, "qty": 1}]`},
		{"qty 1000", "acme", list(entry("13", "3", "1000")), `[{"id": 13, "previous_revision": 3, "new_revision": 4, "qty": 1000}]`},
		// '1e3'::jsonb is 1000 before cancel_chunk sees it: accepted at the SQL face.
		{"jsonb qty 1e3", "acme", list(entry("14", "3", "1e3")), `[{"id": 14, "previous_revision": 3, "new_revision": 4, "qty": 1000}]`},
		{"tenant of 64 characters", long64, list(entry("15", "3", "2")), `[{"id": 15, "previous_revision": 3, "new_revision": 4, "qty": 2}]`},
		{"tenant of 1 character", "a", list(entry("16", "3", "2")), `[{"id": 16, "previous_revision": 3, "new_revision": 4, "qty": 2}]`},
	}
	var changes64 []string
	for id := 100; id < 164; id++ {
		changes64 = append(changes64, fmt.Sprintf(`{"id": %d, "previous_revision": 3, "new_revision": 4, "qty": 2}`, id))
	}
	cases = append(cases, struct{ name, tenant, items, want string }{"64 items", "acme", reversed(100, 64), list(changes64...)})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sameJSON(t, "cancel_chunk", pgtest.MustString(t, s.Conn, "select cancel_chunk($1, $2)::text", c.tenant, c.items), c.want)
		})
	}
	var rows64 []string
	for id := 100; id < 164; id++ {
		rows64 = append(rows64, fmt.Sprintf(`[%d, "acme", 2, "cancelled", 4]`, id))
	}
	sameJSON(t, "orders", ordersOf(t, s, 0, 2147483647), fmt.Sprintf(`[
	  [1, "acme", 2, "cancelled", 4], [10, "acme", 2, "cancelled", 1], [11, "acme", 2, "cancelled", 2147483647],
	  [12, "acme", 1, "cancelled", 4], [13, "acme", 1000, "cancelled", 4], [14, "acme", 1000, "cancelled", 4],
	  [15, %q, 2, "cancelled", 4], [16, "a", 2, "cancelled", 4], %s,
	  [2147483647, "acme", 2, "cancelled", 4]]`, long64, strings.Join(rows64, ", ")))
	sameJSON(t, "jobs and audit", pgtest.MustString(t, s.Conn,
		"select jsonb_build_array((select count(*) from jobs), (select count(*) from job_audit))::text"), `[0, 0]`)
}

// inspect_job, run_chunk and report validate job_id the same way.
func TestSQLValidateJobID(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "kept", "acme", 1, 3, 2)
	s.Exec(t, "select run_chunk('kept')")

	for _, fn := range []string{"inspect_job", "run_chunk", "report"} {
		sql := "select " + fn + "($1)::text"
		t.Run(fn, func(t *testing.T) {
			for _, b := range badNames {
				t.Run(b.name, func(t *testing.T) {
					refuse(t, s, "22023", "job_id: "+nameRule+", got "+b.got, sql, b.value)
				})
			}
			t.Run("SQL NULL", func(t *testing.T) {
				refuse(t, s, "22023", "job_id: "+nameRule+", got null", sql, nil)
			})
			for _, name := range goodNames {
				t.Run("accepted unknown "+name, func(t *testing.T) {
					if fn == "inspect_job" {
						before := state(t, s)
						if got := pgtest.MustString(t, s.Conn, sql, name); got != "<null>" {
							t.Fatalf("inspect_job(%q): got %s, want NULL", name, got)
						}
						unchanged(t, s, "inspect_job", before)
						return
					}
					refuse(t, s, "CH409", fmt.Sprintf("job %s: not found", name), sql, name)
				})
			}
		})
	}

	t.Run("a job_id of 64 characters works end to end", func(t *testing.T) {
		registerJob(t, s, long64, "acme", 10, 3, 2)
		sameJSON(t, "run_chunk", pgtest.MustString(t, s.Conn, "select run_chunk($1)::text", long64),
			`{"processed": [10, 11], "next_index": 2, "done": false}`)
		sameJSON(t, "inspect_job", pgtest.MustString(t, s.Conn, "select inspect_job($1)::text", long64),
			fmt.Sprintf(`{"job_id": %q, "tenant": "acme", "targets": %s, "chunk_size": 2, "next_index": 2}`, long64, targets(10, 3)))
		sameJSON(t, "report", pgtest.MustString(t, s.Conn, "select report($1)::text", long64),
			`{"approved": [10, 11, 12], "committed": [10, 11], "remaining": [12], "matching": [10, 11], "drifted": [], "missing": []}`)
	})
}
