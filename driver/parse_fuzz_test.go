package driver_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/chunks-dev/chunks/driver"
)

// The fuzz targets check ParsePlan and ParseTargets against docs/contract.md §3
// without a database:
//
//   - they never panic, and give the same answer twice;
//   - they accept exactly what an independent model of §3 accepts (the model
//     below is written with encoding/json's own Unmarshal and json.Valid,
//     not with the driver's token walk), with the same result;
//   - an accepted result obeys every rule (ids strictly ascending, every field
//     in range, 1..64 targets, chunk size 1..10, AllowPartial true, names
//     matching ^[A-Za-z0-9_-]{1,64}$), Manifest agrees with it, and its
//     json.Marshal parses back to an identical value;
//   - a refusal is a *driver.Error matching driver.ErrInvalid whose text is
//     "invalid: " followed by a message that starts with a field name.
//
// The seed corpus is in testdata/fuzz/FuzzParsePlan and
// testdata/fuzz/FuzzParseTargets; `go test ./driver` runs it as ordinary
// tests and `go test -fuzz=FuzzParsePlan ./driver` explores from it.

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// strictInt is the text of a JSON number that §3 calls an integer.
var strictInt = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// contractRange is the §3 range of each target field, written out here
// rather than read from the driver, so a change of either one fails.
var contractRange = map[string][2]int64{
	"id":       {1, 2147483647},
	"revision": {0, 2147483646},
	"qty":      {1, 1000},
}

var planFields = []string{"plan", "job_id", "tenant", "targets", "chunk_size", "allow_partial"}

func FuzzParsePlan(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := driver.ParsePlan(data)
		p2, err2 := driver.ParsePlan(data)
		if !reflect.DeepEqual(p, p2) || errText(err) != errText(err2) {
			t.Fatalf("not deterministic: %#v %v, then %#v %v", p, err, p2, err2)
		}
		want, ok := modelPlan(data)
		if err != nil {
			checkRefusal(t, err, planFields)
			if ok {
				t.Fatalf("refused a plan that §3 accepts (%#v): %v\ninput %q", want, err, data)
			}
			return
		}
		if !ok {
			t.Fatalf("accepted a plan that §3 refuses: %#v\ninput %q", p, data)
		}
		if !reflect.DeepEqual(p, want) {
			t.Fatalf("accepted as %#v, §3 reads %#v\ninput %q", p, want, data)
		}
		checkPlan(t, p)
		m, err := driver.Manifest(p.JobID, p.Tenant, p.Targets, p.ChunkSize, p.AllowPartial)
		if err != nil || !reflect.DeepEqual(m, p) {
			t.Fatalf("Manifest of the accepted plan: %#v, %v; want %#v", m, err, p)
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("marshal %#v: %v", p, err)
		}
		back, err := driver.ParsePlan(out)
		if err != nil || !reflect.DeepEqual(back, p) {
			t.Fatalf("%s parses back as %#v, %v; want %#v", out, back, err, p)
		}
	})
}

func FuzzParseTargets(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := driver.ParseTargets(data)
		ts2, err2 := driver.ParseTargets(data)
		if !reflect.DeepEqual(ts, ts2) || errText(err) != errText(err2) {
			t.Fatalf("not deterministic: %v %v, then %v %v", ts, err, ts2, err2)
		}
		want, ok := modelTargets(data)
		if err != nil {
			checkRefusal(t, err, []string{"targets"})
			if ts != nil {
				t.Fatalf("refusal returned targets %v", ts)
			}
			if ok {
				t.Fatalf("refused a list that §3 accepts (%v): %v\ninput %q", want, err, data)
			}
			return
		}
		if !ok {
			t.Fatalf("accepted a list that §3 refuses: %v\ninput %q", ts, data)
		}
		if !reflect.DeepEqual(ts, want) {
			t.Fatalf("accepted as %v, §3 reads %v\ninput %q", ts, want, data)
		}
		checkTargets(t, ts)
		out, err := json.Marshal(ts)
		if err != nil {
			t.Fatalf("marshal %v: %v", ts, err)
		}
		back, err := driver.ParseTargets(out)
		if err != nil || !reflect.DeepEqual(back, ts) {
			t.Fatalf("%s parses back as %v, %v; want %v", out, back, err, ts)
		}
	})
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// checkRefusal fails unless err is an ErrInvalid whose message starts with
// one of fields, followed by ':', '.' or '['.
func checkRefusal(t *testing.T, err error, fields []string) {
	t.Helper()
	if !errors.Is(err, driver.ErrInvalid) || errors.Is(err, driver.ErrConflict) {
		t.Fatalf("refusal %v does not match ErrInvalid alone", err)
	}
	var e *driver.Error
	if !errors.As(err, &e) {
		t.Fatalf("refusal %v is a %T, not a *driver.Error", err, err)
	}
	if e.Err != nil {
		t.Fatalf("a Go-side refusal carries a server error: %v", e.Err)
	}
	if err.Error() != "invalid: "+e.Msg {
		t.Fatalf("text %q, want %q", err.Error(), "invalid: "+e.Msg)
	}
	end := strings.IndexAny(e.Msg, ":.[")
	if end < 0 || !slices.Contains(fields, e.Msg[:end]) {
		t.Fatalf("message %q does not start with one of the fields %v", e.Msg, fields)
	}
}

func checkPlan(t *testing.T, p driver.Plan) {
	t.Helper()
	for _, name := range []string{p.JobID, p.Tenant} {
		if !nameRE.MatchString(name) {
			t.Fatalf("accepted name %q", name)
		}
	}
	if p.ChunkSize < 1 || p.ChunkSize > 10 {
		t.Fatalf("accepted chunk_size %d", p.ChunkSize)
	}
	if !p.AllowPartial {
		t.Fatal("accepted allow_partial false")
	}
	checkTargets(t, p.Targets)
}

func checkTargets(t *testing.T, ts []driver.Target) {
	t.Helper()
	if len(ts) < 1 || len(ts) > 64 {
		t.Fatalf("accepted %d targets", len(ts))
	}
	for i, x := range ts {
		for name, v := range map[string]int64{"id": x.ID, "revision": x.Revision, "qty": x.Qty} {
			if r := contractRange[name]; v < r[0] || v > r[1] {
				t.Fatalf("accepted targets[%d].%s = %d", i, name, v)
			}
		}
		if i > 0 && ts[i-1].ID >= x.ID {
			t.Fatalf("ids not strictly ascending at %d: %v", i, ts)
		}
	}
}

// modelPlan is §3 for a plan, read with encoding/json: the plan and true
// when data is acceptable.
func modelPlan(data []byte) (driver.Plan, bool) {
	if !wellFormed(data) {
		return driver.Plan{}, false
	}
	var obj map[string]json.RawMessage
	if !isKind(data, '{') || json.Unmarshal(data, &obj) != nil || len(obj) != 5 {
		return driver.Plan{}, false
	}
	var p driver.Plan
	for key, dst := range map[string]*string{"job_id": &p.JobID, "tenant": &p.Tenant} {
		raw, present := obj[key]
		if !present || !isKind(raw, '"') || json.Unmarshal(raw, dst) != nil || !nameRE.MatchString(*dst) {
			return driver.Plan{}, false
		}
	}
	raw, present := obj["targets"]
	if !present {
		return driver.Plan{}, false
	}
	ts, ok := modelTargets(raw)
	if !ok {
		return driver.Plan{}, false
	}
	p.Targets = ts
	size, ok := modelInt(obj["chunk_size"], 1, 10)
	if !ok {
		return driver.Plan{}, false
	}
	p.ChunkSize = int(size)
	if string(bytes.TrimSpace(obj["allow_partial"])) != "true" {
		return driver.Plan{}, false
	}
	p.AllowPartial = true
	return p, true
}

// modelTargets is §3 for a target list: the list sorted by id and true
// when data is acceptable.
func modelTargets(data []byte) ([]driver.Target, bool) {
	if !wellFormed(data) {
		return nil, false
	}
	var list []map[string]json.RawMessage
	if !isKind(data, '[') || json.Unmarshal(data, &list) != nil || len(list) < 1 || len(list) > 64 {
		return nil, false
	}
	out := make([]driver.Target, len(list))
	for i, e := range list {
		if e == nil || len(e) != 3 { // e is nil for a JSON null entry
			return nil, false
		}
		var ok [3]bool
		out[i].ID, ok[0] = modelInt(e["id"], contractRange["id"][0], contractRange["id"][1])
		out[i].Revision, ok[1] = modelInt(e["revision"], contractRange["revision"][0], contractRange["revision"][1])
		out[i].Qty, ok[2] = modelInt(e["qty"], contractRange["qty"][0], contractRange["qty"][1])
		if ok != [3]bool{true, true, true} {
			return nil, false
		}
	}
	slices.SortFunc(out, func(a, b driver.Target) int { return cmp.Compare(a.ID, b.ID) })
	for i := 1; i < len(out); i++ {
		if out[i].ID == out[i-1].ID {
			return nil, false
		}
	}
	return out, true
}

func modelInt(raw json.RawMessage, lo, hi int64) (int64, bool) {
	text := string(bytes.TrimSpace(raw))
	if !strictInt.MatchString(text) {
		return 0, false
	}
	n, err := strconv.ParseInt(text, 10, 64)
	return n, err == nil && lo <= n && n <= hi
}

func isKind(raw []byte, first byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == first
}

// wellFormed: valid UTF-8, one valid JSON value, and no object anywhere in it
// with a duplicate key.
func wellFormed(data []byte) bool {
	if !utf8.Valid(data) || !json.Valid(data) {
		return false
	}
	type frame struct {
		object, wantKey bool
		keys            map[string]bool
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
				continue
			}
			key := tok.(string)
			if top.keys[key] {
				return false
			}
			top.keys[key], top.wantKey = true, false
			continue
		}
		if top != nil && top.object {
			top.wantKey = true // tok is this key's value
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, wantKey: true, keys: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// Deeply nested input is refused at a fixed depth with a short message that
// names the field. (Before the depth bound, each level built its path
// string anew: 100 KB of "[" took minutes and gigabytes, and a larger input
// could overflow the stack.)
func TestParseDeepNesting(t *testing.T) {
	deep := strings.Repeat("[", 20000)
	for _, c := range []struct {
		name  string
		parse func([]byte) error
		data  string
		want  string
	}{
		{"plan", func(b []byte) error { _, err := driver.ParsePlan(b); return err }, deep, "plan[0]"},
		{"plan targets", func(b []byte) error { _, err := driver.ParsePlan(b); return err }, `{"targets": ` + deep, "targets[0]"},
		{"plan job_id", func(b []byte) error { _, err := driver.ParsePlan(b); return err },
			`{"job_id": ` + strings.Repeat(`{"a": `, 20000), "job_id.a.a"},
		{"targets", func(b []byte) error { _, err := driver.ParseTargets(b); return err }, deep, "targets[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.parse([]byte(c.data))
			if !errors.Is(err, driver.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			msg := err.Error()
			if len(msg) > 300 || !strings.HasPrefix(msg, "invalid: "+c.want) || !strings.HasSuffix(msg, ": lists and objects nested more than 32 deep") {
				t.Fatalf("message (%d bytes) %.300q", len(msg), msg)
			}
		})
	}
}

// More than MaxInputBytes is refused before it is looked at, and so is a
// byte order mark, saying so (encoding/json would say "invalid character 'ï'").
func TestParseInputBounds(t *testing.T) {
	plan := `{"job_id": "j", "tenant": "t", "targets": [{"id": 1, "revision": 0, "qty": 1}], "chunk_size": 1, "allow_partial": true}`
	pad := func(s string, n int) []byte { return []byte(s + strings.Repeat(" ", n-len(s))) }
	if _, err := driver.ParsePlan(pad(plan, driver.MaxInputBytes)); err != nil {
		t.Fatalf("a plan of exactly 1 MiB: %v", err)
	}
	for _, c := range []struct {
		name, want string
		err        func() error
	}{
		{"plan over 1 MiB", "invalid: plan: is larger than the 1 MiB limit (1048577 bytes, at most 1048576)",
			func() error { _, err := driver.ParsePlan(pad(plan, driver.MaxInputBytes+1)); return err }},
		{"targets over 1 MiB", "invalid: targets: is larger than the 1 MiB limit (2000000 bytes, at most 1048576)",
			func() error { _, err := driver.ParseTargets(pad("[]", 2_000_000)); return err }},
		{"plan with a BOM", "invalid: plan: starts with a UTF-8 byte order mark; save it without one",
			func() error { _, err := driver.ParsePlan([]byte("\xef\xbb\xbf" + plan)); return err }},
		{"targets with a BOM", "invalid: targets: starts with a UTF-8 byte order mark; save it without one",
			func() error { _, err := driver.ParseTargets([]byte("\xef\xbb\xbf[]")); return err }},
	} {
		if err := c.err(); !errors.Is(err, driver.ErrInvalid) || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
