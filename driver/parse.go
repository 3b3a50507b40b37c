package driver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// object is a JSON object as read by decodeStrict: its keys in order, with
// no duplicates.
type object struct {
	keys []string
	vals map[string]any
}

// maxDepth bounds how deeply lists and objects may nest. A plan needs three
// levels (the plan, its targets, a target); the bound keeps hostile input
// from growing the stack (and the error's path) without limit.
const maxDepth = 32

// jsonPath is where a value sits in the document: a root field ("plan",
// "targets"), an object key or a list index under a parent. It is turned
// into text only for an error, so reading a value costs no string building.
type jsonPath struct {
	parent  *jsonPath
	key     string
	index   int
	isIndex bool
}

// String is the path as error messages name it: targets[3].id (an
// [Excerpt] of it: keys below the known ones are the input's own).
func (p *jsonPath) String() string { return Excerpt(p.full(), false) }

func (p *jsonPath) full() string {
	switch {
	case p.parent == nil:
		return p.key
	case p.isIndex:
		return fmt.Sprintf("%s[%d]", p.parent.full(), p.index)
	case p.parent.parent == nil && (p.parent.key == "plan" || p.parent.key == "definition"):
		return p.key // a plan's or a definition's keys are the fields themselves
	}
	return p.parent.full() + "." + p.key
}

// decodeStrict reads data (at most [MaxInputBytes], with no byte order
// mark) as exactly one JSON value. Objects become *object
// (a duplicate key is refused), lists []any, numbers json.Number (their
// text, so 1.0 and 1e3 stay distinguishable from 1), plus string, bool, nil.
// When keys is not nil and the value is an object, a key not in keys is
// refused as soon as it is read, before its value: what cannot be a field
// is not looked into.
func decodeStrict(field string, data []byte, keys []string) (any, error) {
	if len(data) > MaxInputBytes {
		return nil, Invalidf("%s: is larger than the 1 MiB limit (%d bytes, at most %d)", field, len(data), MaxInputBytes)
	}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return nil, Invalidf("%s: starts with a UTF-8 byte order mark; save it without one", field)
	}
	if !utf8.Valid(data) {
		return nil, Invalidf("%s: is not valid UTF-8", field)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, &jsonPath{key: field}, 0, keys)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, Invalidf("%s: must be a single JSON value, found more after it", field)
	}
	return v, nil
}

// decodeValue reads the value at path, which has depth lists and objects
// around it; keys (when not nil) are the keys allowed if it is an object.
func decodeValue(dec *json.Decoder, path *jsonPath, depth int, keys []string) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(path, err)
	}
	if tok == json.Delim('{') || tok == json.Delim('[') {
		if depth >= maxDepth {
			return nil, Invalidf("%s: lists and objects nested more than %d deep", path, maxDepth)
		}
	}
	switch tok {
	case json.Delim('{'):
		obj := &object{vals: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, syntaxError(path, err)
			}
			key := kt.(string) // the decoder only yields string keys inside an object
			if keys != nil && !slices.Contains(keys, key) {
				return nil, Invalidf("%s: unexpected key %s", path, Excerpt(key, true))
			}
			if _, dup := obj.vals[key]; dup {
				return nil, Invalidf("%s: duplicate key %s", path, Excerpt(key, true))
			}
			v, err := decodeValue(dec, &jsonPath{parent: path, key: key}, depth+1, nil)
			if err != nil {
				return nil, err
			}
			obj.keys = append(obj.keys, key)
			obj.vals[key] = v
		}
		if _, err := dec.Token(); err != nil { // '}'
			return nil, syntaxError(path, err)
		}
		return obj, nil
	case json.Delim('['):
		list := []any{}
		for dec.More() {
			v, err := decodeValue(dec, &jsonPath{parent: path, index: len(list), isIndex: true}, depth+1, nil)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		if _, err := dec.Token(); err != nil { // ']'
			return nil, syntaxError(path, err)
		}
		return list, nil
	}
	return tok, nil
}

// keyList is an object's keys as a refusal shows them: "id, qty".
func keyList(keys []string) string { return Excerpt(strings.Join(keys, ", "), false) }

func syntaxError(path *jsonPath, err error) error {
	if errors.Is(err, io.EOF) {
		return Invalidf("%s: invalid JSON: unexpected end of input", path)
	}
	return Invalidf("%s: invalid JSON: %v", path, err)
}

// integer reads a strict JSON integer within [min, max]: no fraction, no
// exponent, not a string, boolean or null.
func integer(path string, v any, min, max int64) (int64, error) {
	num, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(num), ".eE") {
		return 0, Invalidf("%s: must be an integer, got %s", path, describe(v))
	}
	n, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || n < min || n > max {
		return 0, Invalidf("%s: must be between %d and %d, got %s", path, min, max, Excerpt(string(num), false))
	}
	return n, nil
}

// targetsFrom checks a decoded target list and returns it normalized.
func targetsFrom(field string, v any) ([]Target, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, Invalidf("%s: must be a list of 1 to %d targets, got %s", field, MaxTargets, describe(v))
	}
	if len(list) == 0 || len(list) > MaxTargets {
		return nil, Invalidf("%s: must be a list of 1 to %d targets, got %d", field, MaxTargets, len(list))
	}
	items := make([]Target, len(list))
	for i, e := range list {
		t, err := targetFrom(fmt.Sprintf("%s[%d]", field, i), e)
		if err != nil {
			return nil, err
		}
		items[i] = t
	}
	return normalize(field, items)
}

// targetFrom checks one decoded target (path names it in errors): an
// object of exactly id, revision and qty, integers in range.
func targetFrom(path string, e any) (Target, error) {
	obj, ok := e.(*object)
	if !ok {
		return Target{}, Invalidf("%s: must be an object with the keys id, revision, qty, got %s", path, describe(e))
	}
	if len(obj.keys) != len(targetFields) {
		return Target{}, Invalidf("%s: must have exactly the keys id, revision, qty, got %s", path, keyList(obj.keys))
	}
	var vals [3]int64
	for j, f := range targetFields {
		fv, present := obj.vals[f.name]
		if !present {
			return Target{}, Invalidf("%s: must have exactly the keys id, revision, qty, got %s", path, keyList(obj.keys))
		}
		n, err := integer(path+"."+f.name, fv, f.min, f.max)
		if err != nil {
			return Target{}, err
		}
		vals[j] = n
	}
	return Target{ID: vals[0], Revision: vals[1], Qty: vals[2]}, nil
}

// ParseTargets reads a strict JSON list of 1 to 64 targets
// ({"id", "revision", "qty"}, exactly those keys, integers in range, no
// duplicate ids or keys) and returns it normalized: a new list sorted by id.
func ParseTargets(data []byte) ([]Target, error) {
	v, err := decodeStrict("targets", data, nil)
	if err != nil {
		return nil, err
	}
	return targetsFrom("targets", v)
}

// ParsePlan reads a strict JSON plan: an object with exactly the keys
// job_id, tenant, targets, chunk_size and allow_partial, each valid by
// docs/contract.md §3 (numbers must be JSON integers, allow_partial exactly true, no
// duplicate keys). Targets come back normalized.
func ParsePlan(data []byte) (Plan, error) {
	obj, p, err := planFields(data, MaxChunkSize)
	if err != nil {
		return Plan{}, err
	}
	plan := Plan{JobID: p.JobID, Tenant: p.Tenant, ChunkSize: p.ChunkSize, AllowPartial: p.AllowPartial}
	if plan.Targets, err = targetsFrom("targets", obj.vals["targets"]); err != nil {
		return Plan{}, err
	}
	return plan, nil
}

// ParseChangePlan reads a strict JSON plan of a declared change's job
// ([RegisterChange]) as [ParsePlan] reads a plan: the same five keys and
// rules, no duplicate key at any depth, but a declared change's limits:
// chunk_size 1 to 1,000 and a list of 1 to 10,000 target objects, whose
// fields the server checks against the change. Numbers are kept as written
// (a bigint key, a numeric price).
func ParseChangePlan(data []byte) (ChangePlan, error) {
	obj, p, err := planFields(data, MaxChangeChunkSize)
	if err != nil {
		return ChangePlan{}, err
	}
	list, ok := obj.vals["targets"].([]any)
	if !ok {
		return ChangePlan{}, Invalidf("targets: must be a list of 1 to %d targets, got %s", MaxChangeTargets, describe(obj.vals["targets"]))
	}
	if len(list) == 0 || len(list) > MaxChangeTargets {
		return ChangePlan{}, Invalidf("targets: must be a list of 1 to %d targets, got %d", MaxChangeTargets, len(list))
	}
	p.Targets = make([]map[string]any, len(list))
	for i, e := range list {
		t, ok := e.(*object)
		if !ok {
			return ChangePlan{}, Invalidf("targets[%d]: must be an object of the change's fields, got %s", i, describe(e))
		}
		p.Targets[i] = plain(t).(map[string]any)
	}
	return p, nil
}

// plain is a value of decodeStrict as encoding/json would have decoded it
// (with UseNumber): objects as maps.
func plain(v any) any {
	switch v := v.(type) {
	case *object:
		m := make(map[string]any, len(v.vals))
		for k, e := range v.vals {
			m[k] = plain(e)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

// planFields reads a plan's object and its fields but the targets, for
// ParsePlan and ParseChangePlan: job_id, tenant, chunk_size (1 to
// maxChunkSize) and allow_partial, checked.
func planFields(data []byte, maxChunkSize int64) (*object, ChangePlan, error) {
	v, err := decodeStrict("plan", data, planKeys)
	if err != nil {
		return nil, ChangePlan{}, err
	}
	obj, ok := v.(*object)
	if !ok {
		return nil, ChangePlan{}, Invalidf("plan: must be an object with the keys %s, got %s", strings.Join(planKeys, ", "), describe(v))
	}
	for _, k := range planKeys {
		if _, present := obj.vals[k]; !present {
			return nil, ChangePlan{}, Invalidf("plan: missing key %q", k)
		}
	}
	var p ChangePlan
	for _, name := range []struct {
		key string
		dst *string
	}{{"job_id", &p.JobID}, {"tenant", &p.Tenant}} {
		s, ok := obj.vals[name.key].(string)
		if !ok {
			return nil, ChangePlan{}, Invalidf("%s: must be a string, got %s", name.key, describe(obj.vals[name.key]))
		}
		if err := checkName(name.key, s); err != nil {
			return nil, ChangePlan{}, err
		}
		*name.dst = s
	}
	size, err := integer("chunk_size", obj.vals["chunk_size"], MinChunkSize, maxChunkSize)
	if err != nil {
		return nil, ChangePlan{}, err
	}
	p.ChunkSize = int(size)
	if b, ok := obj.vals["allow_partial"].(bool); !ok || !b {
		return nil, ChangePlan{}, Invalidf("allow_partial: must be true (each chunk commits on its own), got %s", describe(obj.vals["allow_partial"]))
	}
	p.AllowPartial = true
	return obj, p, nil
}
