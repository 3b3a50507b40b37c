package main

import (
	"slices"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

const testItems = `[{"id": 2, "revision": 1, "qty": 1}, {"id": 1, "revision": 3, "qty": 2}]`

func TestManifestOptions(t *testing.T) {
	path := writeFile(t, "items.json", testItems)
	got := parsed(t, parseManifest, "manifest", "--job-id", "j1", "--tenant", "acme", "--chunk-size", "2", "--allow-partial", path)
	want := manifestOptions{JobID: "j1", Tenant: "acme", ChunkSize: 2, AllowPartial: true,
		Items: []driver.Target{{ID: 1, Revision: 3, Qty: 2}, {ID: 2, Revision: 1, Qty: 1}}}
	if got.JobID != want.JobID || got.Tenant != want.Tenant || got.ChunkSize != want.ChunkSize || !got.AllowPartial || !slices.Equal(got.Items, want.Items) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	ok := func() *manifestOptions { o := want; return &o }
	for _, tc := range []struct {
		edit func(o *manifestOptions)
		want string
	}{
		{func(o *manifestOptions) { o.JobID = "a b" }, `job_id: must be 1 to 64 ASCII letters, digits, _ or -, got "a b"`},
		{func(o *manifestOptions) { o.Tenant = "" }, "tenant: must be 1 to 64 ASCII letters, digits, _ or -, got 0 characters"},
		{func(o *manifestOptions) { o.ChunkSize = 11 }, "chunk_size: must be between 1 and 10, got 11"},
		{func(o *manifestOptions) { o.AllowPartial = false }, "allow_partial: must be true"},
		{func(o *manifestOptions) { o.Items = nil }, "items: must be a list of 1 to 64 targets, got 0"},
	} {
		o := ok()
		tc.edit(o)
		wantInvalid(t, o, tc.want)
	}
	wantExit(t, chunksIn(t, nil, "", "manifest", "--job-id", "j1", path), 2, "manifest needs --tenant, --chunk-size (chunks manifest --help)")
	wantExit(t, chunksIn(t, nil, "", "manifest"), 2, "manifest needs ITEMS.json (chunks manifest [flags] ITEMS.json; - reads stdin)")
	wantExit(t, chunksIn(t, nil, `[{"id": 1}]`, "manifest", "--job-id", "j1", "--tenant", "acme", "--chunk-size", "2", "-"), 2, "targets[0]")
	wantExit(t, chunksIn(t, nil, "", "manifest", "--job-id", "j1", "--tenant", "acme", "--chunk-size", "2", path+".not-there"), 2, "cannot be read: no such file")
}

// The plan comes out normalized (targets by id), from a file or stdin.
func TestManifestRun(t *testing.T) {
	o := &manifestOptions{JobID: "j1", Tenant: "acme", ChunkSize: 2, AllowPartial: true,
		Items: []driver.Target{{ID: 2, Revision: 1, Qty: 1}, {ID: 1, Revision: 3, Qty: 2}}}
	want := `{"job_id":"j1","tenant":"acme","targets":[{"id":1,"revision":3,"qty":2},{"id":2,"revision":1,"qty":1}],"chunk_size":2,"allow_partial":true}` + "\n"
	if got := wantRun(t, runManifest, deps{}, o); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	wantOut(t, chunksIn(t, nil, testItems, "manifest", "--json", "--job-id", "j1", "--tenant", "acme", "--chunk-size", "2", "--allow-partial", "-"), want)
	if got := clitest.MustJSON(t, o.Items); got != `[{"id":2,"revision":1,"qty":1},{"id":1,"revision":3,"qty":2}]` {
		t.Errorf("run changed the options' items: %s", got)
	}
}
