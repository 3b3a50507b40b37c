package driver_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
)

// name64 is a valid name of exactly 64 characters, using every allowed class.
var name64 = "Az09_-" + strings.Repeat("x", 58)

const nameRule = "must be 1 to 64 ASCII letters, digits, _ or -"

// manifestArgs are Manifest's arguments; okArgs is a valid approval.
type manifestArgs struct {
	jobID, tenant string
	items         []driver.Target
	chunkSize     int
	allowPartial  bool
}

func okArgs() manifestArgs {
	return manifestArgs{"fest-2024", "acme", []driver.Target{{ID: 3, Revision: 0, Qty: 2}, {ID: 1, Revision: 5, Qty: 1}}, 2, true}
}

func (a manifestArgs) with(change func(*manifestArgs)) manifestArgs {
	a.items = append([]driver.Target(nil), a.items...)
	change(&a)
	return a
}

func (a manifestArgs) manifest() (driver.Plan, error) {
	return driver.Manifest(a.jobID, a.tenant, a.items, a.chunkSize, a.allowPartial)
}

func oneItem(id, revision, qty int64) func(*manifestArgs) {
	return func(a *manifestArgs) { a.items = []driver.Target{{ID: id, Revision: revision, Qty: qty}} }
}

func nItems(n int) []driver.Target {
	out := make([]driver.Target, n)
	for i := range out {
		out[i] = driver.Target{ID: int64(n - i), Revision: 3, Qty: 2} // descending
	}
	return out
}

func TestManifestRefuses(t *testing.T) {
	cases := []struct {
		name   string
		change func(*manifestArgs)
		want   string
	}{
		{"job_id empty", func(a *manifestArgs) { a.jobID = "" }, "job_id: " + nameRule + ", got 0 characters"},
		{"job_id 65 characters", func(a *manifestArgs) { a.jobID = name64 + "a" }, "job_id: " + nameRule + ", got 65 characters"},
		{"job_id space", func(a *manifestArgs) { a.jobID = "a b" }, `job_id: ` + nameRule + `, got "a b"`},
		{"job_id leading space is not trimmed", func(a *manifestArgs) { a.jobID = " a" }, `job_id: ` + nameRule + `, got " a"`},
		{"job_id newline", func(a *manifestArgs) { a.jobID = "a\n" }, `job_id: ` + nameRule + `, got "a\n"`},
		{"job_id dot", func(a *manifestArgs) { a.jobID = "a.b" }, `job_id: ` + nameRule + `, got "a.b"`},
		{"job_id e acute", func(a *manifestArgs) { a.jobID = "é" }, `job_id: ` + nameRule + `, got "é"`},
		{"job_id 40 e acute is 40 characters, not 80 bytes", func(a *manifestArgs) { a.jobID = strings.Repeat("é", 40) },
			`job_id: ` + nameRule + `, got "` + strings.Repeat("é", 40) + `"`},
		{"job_id 65 e acute", func(a *manifestArgs) { a.jobID = strings.Repeat("é", 65) }, "job_id: " + nameRule + ", got 65 characters"},
		{"job_id invalid UTF-8", func(a *manifestArgs) { a.jobID = "a\xffb" }, `job_id: ` + nameRule + `, got "a\xffb"`},
		{"tenant empty", func(a *manifestArgs) { a.tenant = "" }, "tenant: " + nameRule + ", got 0 characters"},
		{"tenant 65 characters", func(a *manifestArgs) { a.tenant = strings.Repeat("t", 65) }, "tenant: " + nameRule + ", got 65 characters"},
		{"tenant slash", func(a *manifestArgs) { a.tenant = "a/b" }, `tenant: ` + nameRule + `, got "a/b"`},
		{"items nil", func(a *manifestArgs) { a.items = nil }, "items: must be a list of 1 to 64 targets, got 0"},
		{"items empty", func(a *manifestArgs) { a.items = []driver.Target{} }, "items: must be a list of 1 to 64 targets, got 0"},
		{"items 65", func(a *manifestArgs) { a.items = nItems(65) }, "items: must be a list of 1 to 64 targets, got 65"},
		{"id 0", oneItem(0, 3, 2), "items[0].id: must be between 1 and 2147483647, got 0"},
		{"id -1", oneItem(-1, 3, 2), "items[0].id: must be between 1 and 2147483647, got -1"},
		{"id 2147483648", oneItem(2147483648, 3, 2), "items[0].id: must be between 1 and 2147483647, got 2147483648"},
		{"revision -1", oneItem(1, -1, 2), "items[0].revision: must be between 0 and 2147483646, got -1"},
		{"revision 2147483647", oneItem(1, 2147483647, 2), "items[0].revision: must be between 0 and 2147483646, got 2147483647"},
		{"qty 0", oneItem(1, 3, 0), "items[0].qty: must be between 1 and 1000, got 0"},
		{"qty 1001", oneItem(1, 3, 1001), "items[0].qty: must be between 1 and 1000, got 1001"},
		{"qty -9223372036854775808", oneItem(1, 3, -1<<63), "items[0].qty: must be between 1 and 1000, got -9223372036854775808"},
		{"bad entry named by its input position", func(a *manifestArgs) {
			a.items = []driver.Target{{ID: 9, Revision: 3, Qty: 2}, {ID: 1, Revision: 3, Qty: 2}, {ID: 5, Revision: 3, Qty: 0}}
		}, "items[2].qty: must be between 1 and 1000, got 0"},
		{"duplicate id adjacent", func(a *manifestArgs) {
			a.items = []driver.Target{{ID: 1, Revision: 3, Qty: 2}, {ID: 1, Revision: 3, Qty: 2}}
		}, "items: duplicate id 1"},
		{"duplicate id apart, other values", func(a *manifestArgs) {
			a.items = []driver.Target{{ID: 7, Revision: 3, Qty: 2}, {ID: 2, Revision: 3, Qty: 2}, {ID: 7, Revision: 4, Qty: 5}}
		}, "items: duplicate id 7"},
		{"chunk_size 0", func(a *manifestArgs) { a.chunkSize = 0 }, "chunk_size: must be between 1 and 10, got 0"},
		{"chunk_size 11", func(a *manifestArgs) { a.chunkSize = 11 }, "chunk_size: must be between 1 and 10, got 11"},
		{"chunk_size -1", func(a *manifestArgs) { a.chunkSize = -1 }, "chunk_size: must be between 1 and 10, got -1"},
		{"chunk_size 2^40", func(a *manifestArgs) { a.chunkSize = 1 << 40 }, "chunk_size: must be between 1 and 10, got 1099511627776"},
		{"allow_partial false", func(a *manifestArgs) { a.allowPartial = false },
			"allow_partial: must be true (each chunk commits on its own), got false"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := okArgs().with(c.change)
			before := append([]driver.Target(nil), args.items...)
			p, err := args.manifest()
			if !errors.Is(err, driver.ErrInvalid) || errors.Is(err, driver.ErrConflict) {
				t.Fatalf("got %#v, %v; want ErrInvalid", p, err)
			}
			if got, want := err.Error(), "invalid: "+c.want; got != want {
				t.Fatalf("text\n got %q\nwant %q", got, want)
			}
			if !reflect.DeepEqual(p, driver.Plan{}) {
				t.Fatalf("a refusal returned a plan: %#v", p)
			}
			if !slices.Equal(args.items, before) {
				t.Fatalf("the input changed: %v, was %v", args.items, before)
			}
		})
	}
}

func TestManifestAccepts(t *testing.T) {
	cases := []struct {
		name   string
		change func(*manifestArgs)
		want   []driver.Target // the plan's Targets
	}{
		{"unsorted items", func(*manifestArgs) {}, []driver.Target{{ID: 1, Revision: 5, Qty: 1}, {ID: 3, Revision: 0, Qty: 2}}},
		{"id 1, revision 0, qty 1", oneItem(1, 0, 1), []driver.Target{{ID: 1, Revision: 0, Qty: 1}}},
		{"id 2147483647, revision 2147483646, qty 1000", oneItem(2147483647, 2147483646, 1000),
			[]driver.Target{{ID: 2147483647, Revision: 2147483646, Qty: 1000}}},
		{"64 items, descending", func(a *manifestArgs) { a.items = nItems(64) }, reverse(nItems(64))},
		{"names of 1 and 64 characters", func(a *manifestArgs) { a.jobID, a.tenant = "-", name64 }, nil},
		{"chunk_size 1", func(a *manifestArgs) { a.chunkSize = 1 }, nil},
		{"chunk_size 10", func(a *manifestArgs) { a.chunkSize = 10 }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := okArgs().with(c.change)
			p, err := args.manifest()
			if err != nil {
				t.Fatal(err)
			}
			want := driver.Plan{JobID: args.jobID, Tenant: args.tenant, Targets: c.want, ChunkSize: args.chunkSize, AllowPartial: true}
			if c.want == nil {
				want.Targets = p.Targets // checked by the other cases
			}
			if !reflect.DeepEqual(p, want) {
				t.Fatalf("got  %#v\nwant %#v", p, want)
			}
		})
	}
}

func reverse(ts []driver.Target) []driver.Target {
	out := make([]driver.Target, len(ts))
	for i, x := range ts {
		out[len(ts)-1-i] = x
	}
	return out
}

// The plan's Targets are a NEW list: changing it never changes the input,
// and changing the input never changes it, whether or not the input was
// already sorted.
func TestManifestTargetsAreACopy(t *testing.T) {
	for _, c := range []struct {
		name  string
		items []driver.Target
	}{
		{"unsorted", []driver.Target{{ID: 3, Revision: 0, Qty: 2}, {ID: 1, Revision: 5, Qty: 1}}},
		{"already sorted", []driver.Target{{ID: 1, Revision: 5, Qty: 1}, {ID: 3, Revision: 0, Qty: 2}}},
		{"one item", []driver.Target{{ID: 1, Revision: 5, Qty: 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			input := append(make([]driver.Target, 0, len(c.items)+4), c.items...) // spare capacity: an append must not reach it either
			original := append([]driver.Target(nil), input...)

			p, err := driver.Manifest("job", "acme", input, 2, true)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(input, original) {
				t.Fatalf("Manifest reordered or changed its input: %v, was %v", input, original)
			}
			p.Targets[0].Qty = 999
			p.Targets[len(p.Targets)-1].ID = 77
			_ = append(p.Targets, driver.Target{ID: 88})
			if !reflect.DeepEqual(input, original) {
				t.Fatalf("changing the result changed the input: %v, was %v", input, original)
			}
			if got := input[:cap(input)][len(input)]; got != (driver.Target{}) {
				t.Fatalf("the input's spare capacity was written: %v", got)
			}

			q, err := driver.Manifest("job", "acme", input, 2, true)
			if err != nil {
				t.Fatal(err)
			}
			snapshot := append([]driver.Target(nil), q.Targets...)
			for i := range input {
				input[i] = driver.Target{ID: 1000 + int64(i), Revision: 1, Qty: 1}
			}
			if !reflect.DeepEqual(q.Targets, snapshot) {
				t.Fatalf("changing the input changed the result: %v, was %v", q.Targets, snapshot)
			}
		})
	}
}

// Two calls with one input give two independent results.
func TestManifestResultsAreIndependent(t *testing.T) {
	items := []driver.Target{{ID: 2, Revision: 1, Qty: 1}, {ID: 1, Revision: 1, Qty: 1}}
	a, errA := driver.Manifest("job", "acme", items, 1, true)
	b, errB := driver.Manifest("job", "acme", items, 1, true)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	a.Targets[0].Qty = 500
	if b.Targets[0].Qty != 1 {
		t.Fatalf("two plans share their targets: %v", b.Targets)
	}
}
