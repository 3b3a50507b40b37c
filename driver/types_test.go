package driver_test

import (
	"encoding/json"
	"testing"

	"github.com/chunks-dev/chunks/driver"
)

// Every struct marshals with exactly the snake_case keys of docs/contract.md §5 and
// §6, in field order, and every list as [] (never null) even in a zero value.
// The expected JSON is written out in full, so a renamed, added or dropped
// key fails.
func TestJSONKeys(t *testing.T) {
	targets := []driver.Target{{ID: 1, Revision: 2, Qty: 3}, {ID: 4, Revision: 5, Qty: 6}}
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"Target zero", driver.Target{}, `{"id":0,"revision":0,"qty":0}`},
		{"Target", driver.Target{ID: 2147483647, Revision: 2147483646, Qty: 1000}, `{"id":2147483647,"revision":2147483646,"qty":1000}`},

		{"Plan zero", driver.Plan{}, `{"job_id":"","tenant":"","targets":[],"chunk_size":0,"allow_partial":false}`},
		{"Plan empty targets", driver.Plan{Targets: []driver.Target{}}, `{"job_id":"","tenant":"","targets":[],"chunk_size":0,"allow_partial":false}`},
		{"Plan", driver.Plan{JobID: "j-1", Tenant: "acme", Targets: targets, ChunkSize: 10, AllowPartial: true},
			`{"job_id":"j-1","tenant":"acme","targets":[{"id":1,"revision":2,"qty":3},{"id":4,"revision":5,"qty":6}],"chunk_size":10,"allow_partial":true}`},
		{"*Plan zero", &driver.Plan{}, `{"job_id":"","tenant":"","targets":[],"chunk_size":0,"allow_partial":false}`},

		{"Job zero", driver.Job{}, `{"job_id":"","tenant":"","targets":[],"chunk_size":0,"next_index":0}`},
		{"Job", driver.Job{JobID: "j", Tenant: "t", Targets: targets[:1], ChunkSize: 3, NextIndex: 1},
			`{"job_id":"j","tenant":"t","targets":[{"id":1,"revision":2,"qty":3}],"chunk_size":3,"next_index":1}`},
		{"*Job zero (InspectJob's result)", &driver.Job{}, `{"job_id":"","tenant":"","targets":[],"chunk_size":0,"next_index":0}`},

		{"Change zero", driver.Change{}, `{"id":0,"previous_revision":0,"new_revision":0,"qty":0}`},
		{"Change", driver.Change{ID: 7, PreviousRevision: 3, NewRevision: 4, Qty: 2}, `{"id":7,"previous_revision":3,"new_revision":4,"qty":2}`},

		{"ChunkResult zero", driver.ChunkResult{}, `{"processed":[],"next_index":0,"done":false}`},
		{"ChunkResult", driver.ChunkResult{Processed: []int64{1, 2}, NextIndex: 2, Done: true}, `{"processed":[1,2],"next_index":2,"done":true}`},
		{"*ChunkResult zero", &driver.ChunkResult{}, `{"processed":[],"next_index":0,"done":false}`},

		{"JobReport zero", driver.JobReport{},
			`{"approved":[],"committed":[],"remaining":[],"matching":[],"drifted":[],"missing":[]}`},
		{"JobReport", driver.JobReport{Approved: []int64{1, 2, 3, 4}, Committed: []int64{1, 2, 3}, Remaining: []int64{4},
			Matching: []int64{1}, Drifted: []int64{2}, Missing: []int64{3}},
			`{"approved":[1,2,3,4],"committed":[1,2,3],"remaining":[4],"matching":[1],"drifted":[2],"missing":[3]}`},
		{"JobReport one list set", driver.JobReport{Missing: []int64{9}},
			`{"approved":[],"committed":[],"remaining":[],"matching":[],"drifted":[],"missing":[9]}`},
		{"*JobReport zero", &driver.JobReport{},
			`{"approved":[],"committed":[],"remaining":[],"matching":[],"drifted":[],"missing":[]}`},

		{"DrainResult zero", driver.DrainResult{}, `{"calls":0,"processed":[],"next_index":0,"done":false}`},
		{"DrainResult", driver.DrainResult{Calls: 3, Processed: []int64{5, 6}, NextIndex: 2, Done: true},
			`{"calls":3,"processed":[5,6],"next_index":2,"done":true}`},
		{"*DrainResult zero", &driver.DrainResult{}, `{"calls":0,"processed":[],"next_index":0,"done":false}`},

		// Inside another value the same methods apply.
		{"a list of zero values", []any{driver.Plan{}, driver.ChunkResult{}},
			`[{"job_id":"","tenant":"","targets":[],"chunk_size":0,"allow_partial":false},{"processed":[],"next_index":0,"done":false}]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := json.Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// Marshalling never changes the value: the [] of a nil list is written, not
// stored back.
func TestJSONLeavesValueAlone(t *testing.T) {
	r := driver.JobReport{}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	if r.Approved != nil || r.Missing != nil {
		t.Fatalf("Marshal changed the report: %#v", r)
	}
}

// The JSON the server returns (snake_case, as inspect_job and report write it)
// reads back into the structs field by field.
func TestJSONReadsBack(t *testing.T) {
	var job driver.Job
	if err := json.Unmarshal([]byte(`{"job_id":"j","tenant":"t","targets":[{"id":1,"revision":2,"qty":3}],"chunk_size":3,"next_index":1}`), &job); err != nil {
		t.Fatal(err)
	}
	want := driver.Job{JobID: "j", Tenant: "t", Targets: []driver.Target{{ID: 1, Revision: 2, Qty: 3}}, ChunkSize: 3, NextIndex: 1}
	if got, _ := json.Marshal(job); string(got) != mustJSON(t, want) {
		t.Fatalf("got %s, want %s", got, mustJSON(t, want))
	}
	var rep driver.JobReport
	if err := json.Unmarshal([]byte(`{"approved":[1,2],"committed":[1],"remaining":[2],"matching":[],"drifted":[1],"missing":[]}`), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Approved) != 2 || rep.Drifted[0] != 1 || rep.Remaining[0] != 2 {
		t.Fatalf("report read as %#v", rep)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
