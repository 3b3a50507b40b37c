package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// functionName is what [QueryJSON] accepts as fn: a chunks function's name,
// never SQL.
var functionName = regexp.MustCompile(`^[a-z_]{1,63}$`)

// QueryJSON calls the chunks SQL function fn with args (one bind parameter
// each) and decodes the one jsonb value it returns into out, a pointer to
// the Go type that mirrors it. It says whether there was a value: false
// for SQL NULL, out untouched. A server error comes back through
// [MapError].
//
// The decoding is strict: a key the Go type does not name, or a key it
// names that the value lacks, is an error naming fn and the key's path
// ("status_page: missing key jobs[0].tenant"), never a zero value read in
// silence. Such a mismatch means that the functions installed in the
// schema are not those of this binary (run chunks migrate). A field's key
// may be absent when its json tag says omitempty (or omitzero); a field tagged sql:"-"
// is filled in Go, and its key must not come from the server. Package
// fleet reads status_page and worker_status through it too.
func QueryJSON(ctx context.Context, db DB, out any, fn string, args ...any) (bool, error) {
	if !functionName.MatchString(fn) {
		return false, Invalidf("fn: must be the name of a chunks function, got %s", Excerpt(fn, true))
	}
	params := make([]string, len(args))
	for i := range args {
		params[i] = "$" + strconv.Itoa(i+1)
	}
	var body []byte
	if err := db.QueryRow(ctx, "select "+fn+"("+strings.Join(params, ", ")+")::text", args...).Scan(&body); err != nil {
		return false, MapError(err)
	}
	if body == nil {
		return false, nil
	}
	if err := decodeResult(body, out); err != nil {
		return false, fmt.Errorf("%s: %w (are the functions installed those of this chunks? run chunks migrate)", fn, err)
	}
	return true, nil
}

// decodeResult decodes data, one JSON value from the server, into out,
// refusing a key that out's type does not name (at any depth) and then, in
// a second pass over the raw value, a key it names that data lacks. (A
// plan or a campaign file, input from a person, is read by decodeStrict.)
func decodeResult(data []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("more than one JSON value")
	}
	return requireKeys(reflect.TypeOf(out).Elem(), data, "")
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// requireKeys checks that data, a JSON value already decoded into a t,
// holds every key of t's fields that may not be absent, and none of a
// field filled in Go, at every depth; path names data in errors.
func requireKeys(t reflect.Type, data json.RawMessage, path string) error {
	if bytes.Equal(data, []byte("null")) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // a null decodes to the zero value; time.Time and the like read themselves
	}
	switch t.Kind() {
	case reflect.Pointer:
		return requireKeys(t.Elem(), data, path)
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return err
		}
		for i, item := range items {
			if err := requireKeys(t.Elem(), item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		var entries map[string]json.RawMessage
		if err := json.Unmarshal(data, &entries); err != nil {
			return err
		}
		for key, v := range entries {
			if err := requireKeys(t.Elem(), v, join(path, key)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(data, &keys); err != nil {
			return err
		}
		for _, f := range reflect.VisibleFields(t) {
			name, optional, fromGo, ok := jsonKey(f)
			if !ok {
				continue
			}
			v, present := keys[name]
			switch {
			case present && fromGo:
				return fmt.Errorf("unexpected key %s (it is filled in Go)", join(path, name))
			case !present && !optional && !fromGo:
				return fmt.Errorf("missing key %s", join(path, name))
			case present:
				if err := requireKeys(f.Type, v, join(path, name)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// jsonKey is field f's JSON key as encoding/json names it; optional when
// its tag says omitempty or omitzero, fromGo when it is tagged sql:"-"; ok is false
// for a field encoding/json leaves out.
func jsonKey(f reflect.StructField) (name string, optional, fromGo, ok bool) {
	tag := f.Tag.Get("json")
	if !f.IsExported() || f.Anonymous || tag == "-" {
		return "", false, false, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	optional = slices.ContainsFunc(strings.Split(opts, ","), func(o string) bool { return o == "omitempty" || o == "omitzero" })
	return name, optional, f.Tag.Get("sql") == "-", true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
