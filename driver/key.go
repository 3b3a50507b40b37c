package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Key is one target's key as the server wrote it: a JSON number for an
// order id or an integer key of a declared change, a JSON string for a
// text, varchar or uuid key. The zero Key is no key (it marshals as null).
type Key struct {
	raw string // the JSON text, compact
}

// IntKey is the key n, an order id or an integer key.
func IntKey(n int64) Key { return Key{raw: strconv.FormatInt(n, 10)} }

// TextKey is the key s, a text, varchar or uuid key.
func TextKey(s string) Key {
	b, err := json.Marshal(s)
	if err != nil { // a string always marshals
		panic(err)
	}
	return Key{raw: string(b)}
}

// String is the key plainly: the number as written, the string unquoted.
func (k Key) String() string {
	if s, ok := k.Text(); ok {
		return s
	}
	return k.raw
}

// Int is the key as an integer, when it is a JSON number that is one.
func (k Key) Int() (int64, bool) {
	n, err := strconv.ParseInt(k.raw, 10, 64)
	return n, err == nil
}

// Text is the key as a string, when it is a JSON string.
func (k Key) Text() (string, bool) {
	if len(k.raw) == 0 || k.raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal([]byte(k.raw), &s); err != nil {
		return "", false
	}
	return s, true
}

// MarshalJSON writes the key as the server wrote it.
func (k Key) MarshalJSON() ([]byte, error) {
	if k.raw == "" {
		return []byte("null"), nil
	}
	return []byte(k.raw), nil
}

// UnmarshalJSON reads a key: a JSON number or a JSON string, nothing else.
func (k *Key) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	switch v.(type) {
	case json.Number, string:
	default:
		return fmt.Errorf("a key must be a JSON number or string, got %s", Excerpt(string(data), false))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return err
	}
	k.raw = buf.String()
	return nil
}

// splitKeys returns keys as the contract's int64 list when every one is an
// integer (an orders job, or a change with an integer key: rest is nil),
// and otherwise an empty int64 list and keys themselves as rest.
func splitKeys(keys []Key) (ints []int64, rest []Key) {
	ints = make([]int64, 0, len(keys))
	for _, k := range keys {
		n, ok := k.Int()
		if !ok {
			return []int64{}, keys
		}
		ints = append(ints, n)
	}
	return ints, nil
}

// keysOf is the keys of ints and rest, as [splitKeys] split them.
func keysOf(ints []int64, rest []Key) []Key {
	if rest != nil {
		return rest
	}
	out := make([]Key, len(ints))
	for i, n := range ints {
		out[i] = IntKey(n)
	}
	return out
}
