package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Key is one target's key as the server wrote it: a JSON number for an
// order id or a numeric key of a declared change, a JSON string for a key
// of any other type (text, uuid, a date...), and a JSON object of its
// columns for a composite key ({"tenant_id": 7, "order_no": 12}). The zero
// Key is no key (it marshals as null).
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

// String is the key plainly: the number as written, the string unquoted,
// a composite key's object as compact JSON.
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

// UnmarshalJSON reads a key: a JSON number, a JSON string, or an object of
// them (a composite key), nothing else.
func (k *Key) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	scalar := func(v any) bool {
		switch v.(type) {
		case json.Number, string:
			return true
		}
		return false
	}
	ok := scalar(v)
	if obj, isObj := v.(map[string]any); isObj && len(obj) > 0 {
		ok = true
		for _, e := range obj {
			ok = ok && scalar(e)
		}
	}
	if !ok {
		return fmt.Errorf("a key must be a JSON number, a string, or an object of them, got %s", Excerpt(string(data), false))
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

// KeyColumns is a declared change's "key": the columns of one of its
// table's unique keys. One column is written as a JSON string ("id"); a
// list ("key": ["tenant_id", "order_no"]) is a composite key, and stays a
// list even of one column (the definition is kept as written).
type KeyColumns struct {
	Columns []string
	List    bool // written as a list
}

// Column is the key's one column, or "" for a list.
func (k KeyColumns) Column() string {
	if k.List || len(k.Columns) != 1 {
		return ""
	}
	return k.Columns[0]
}

// MarshalJSON writes the key as it was written: a string or a list.
func (k KeyColumns) MarshalJSON() ([]byte, error) {
	if k.List {
		return json.Marshal(k.Columns)
	}
	if len(k.Columns) == 0 {
		return []byte(`""`), nil
	}
	return json.Marshal(k.Columns[0])
}

// UnmarshalJSON reads a key: a column name, or a list of them.
func (k *KeyColumns) UnmarshalJSON(data []byte) error {
	var one string
	if err := json.Unmarshal(data, &one); err == nil {
		*k = KeyColumns{Columns: []string{one}}
		return nil
	}
	var cols []string
	if err := json.Unmarshal(data, &cols); err != nil {
		return fmt.Errorf("a key must be a column name or a list of them, got %s", Excerpt(string(data), false))
	}
	*k = KeyColumns{Columns: cols, List: true}
	return nil
}

// KeyColumn is the key of one column, written as a string.
func KeyColumn(name string) KeyColumns { return KeyColumns{Columns: []string{name}} }
