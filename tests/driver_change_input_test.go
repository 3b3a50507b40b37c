package tests

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Issue 35 items 9 and 16 at the Go face: ParseChange refuses a key given
// twice at any depth, a composite key, a value of the wrong kind and
// \u0000, each naming the field, as encoding/json's own words did not.
func TestParseChangeRefusals(t *testing.T) {
	t.Parallel()
	head := `{"name": "hold_payment", "table": "shop.payments", "key": "payment_id", "version": "lock_version"`
	for _, c := range []struct{ name, def, msg string }{
		{"a set key twice", head + `, "set": {"s": "approved-value", "s": "sneaky"}}`, `set: duplicate key "s"`},
		{"a when key twice", head + `, "when": {"s": 1, "s": 2}, "set": {"s": "x"}}`, `when: duplicate key "s"`},
		{"a field twice", head + `, "set": {"s": "x"}, "key": "id"}`, `definition: duplicate key "key"`},
		{"a key twice deeper", head + `, "set": {"s": {"a": 1, "a": 2}}}`, `set.s: duplicate key "a"`},
		{"a composite key of a number", `{"name": "x", "table": "a.b", "key": ["a", 1], "set": {"s": 1}}`,
			"key[1]: must be a column name (a string), got 1"},
		{"an empty composite key", `{"name": "x", "table": "a.b", "key": [], "set": {"s": 1}}`,
			"key: must be a column name or a non-empty list of column names, got an empty list"},
		{"a key that is a number", `{"name": "x", "table": "a.b", "key": 7, "set": {"s": 1}}`,
			"key: must be a column name or a non-empty list of column names, got 7"},
		{"\\u0000 in a key column", `{"name": "x", "table": "a.b", "key": ["a", "b\u0000"], "set": {"s": 1}}`,
			`key[1]: must not contain \u0000 (PostgreSQL text cannot store it)`},
		{"a name that is null", `{"name": null}`, "name: must be a string, got null"},
		{"expect not a list", head + `, "expect": "amount"}`, `expect: must be a list of column names, got string "amount"`},
		{"expect of numbers", head + `, "expect": ["amount", 1]}`, "expect[1]: must be a column name (a string), got 1"},
		{"set not an object", head + `, "set": ["s"]}`, "set: must be an object of column: constant, got list"},
		{"a set constant a list", head + `, "set": {"s": []}}`, "set.s: must be a string, number or boolean constant, got list"},
		{"a set constant null", head + `, "set": {"s": null}}`, "set.s: must be a string, number or boolean constant, got null"},
		{"a when list empty", head + `, "when": {"s": []}, "set": {"s": "x"}}`, "when.s: a list must hold at least one value"},
		{"a when list of lists", head + `, "when": {"s": [1, [2]]}, "set": {"s": "x"}}`, "when.s[1]: must be a string, number or boolean constant, got list"},
		{"a when object", head + `, "when": {"s": {}}, "set": {"s": "x"}}`, "when.s: must be a string, number or boolean constant, a list of them, or null, got object"},
		{"set_now not a list", head + `, "set_now": "at"}`, `set_now: must be a list of column names, got string "at"`},
		{"set_now of numbers", head + `, "set_now": ["at", 1]}`, "set_now[1]: must be a column name (a string), got 1"},
		{"\\u0000 in set_now", head + `, "set_now": ["a\u0000"]}`, `set_now[0]: must not contain \u0000 (PostgreSQL text cannot store it)`},
		{"a target field a number", head + `, "set_from_target": {"s": 1}}`, "set_from_target.s: must be a target field's name (a string), got 1"},
		{"an unknown field", head + `, "sets": {}}`, `definition: unknown field "sets"`},
		{"not an object", `[]`, "definition: must be an object, got list"},
		{"\\u0000 in a constant", head + `, "set": {"s": "on\u0000hold"}}`, `set.s: must not contain \u0000 (PostgreSQL text cannot store it)`},
		{"\\u0000 in a key", head + `, "set": {"s\u0000": "x"}}`, `set: key "s\x00" must not contain \u0000 (PostgreSQL text cannot store it)`},
		{"\\u0000 in the table", `{"name": "x", "table": "a.b\u0000", "key": "id", "set": {"s": 1}}`,
			`table: must not contain \u0000 (PostgreSQL text cannot store it)`},
		{"\\u0000 in expect", head + `, "expect": ["\u0000"], "set": {"s": 1}}`, `expect[0]: must not contain \u0000 (PostgreSQL text cannot store it)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := driver.ParseChange(strings.NewReader(c.def))
			var e *driver.Error
			if !errors.As(err, &e) || !errors.Is(err, driver.ErrInvalid) || err.Error() != "invalid: "+c.msg {
				t.Fatalf("ParseChange: %v\nwant invalid: %s", err, c.msg)
			}
		})
	}
	// A composite key is a list, kept as written.
	def, err := driver.ParseChange(strings.NewReader(`{"name": "x", "table": "a.b", "key": ["tenant_id", "order_no"], "set": {"s": 1}}`))
	if b, _ := json.Marshal(def.Key); err != nil || def.Key.Column() != "" || string(b) != `["tenant_id","order_no"]` {
		t.Fatalf("ParseChange of a composite key: %+v, %s, %v", def.Key, b, err)
	}
	// In when, a list is one of its values and null is NULL.
	def, err = driver.ParseChange(strings.NewReader(head + `, "when": {"s": ["a", 2, false], "t": null}, "set_now": ["at", "on"]}`))
	if err != nil || !reflect.DeepEqual(def.When, map[string]any{"s": []any{"a", json.Number("2"), false}, "t": nil}) || !slices.Equal(def.SetNow, []string{"at", "on"}) {
		t.Fatalf("ParseChange: %+v, %v", def, err)
	}
	// \\u0000 is a backslash and u0000: text like any other.
	def, err = driver.ParseChange(strings.NewReader(head + `, "set": {"s": "on\\u0000hold", "n": 1.50, "b": true}}`))
	if err != nil || def.Set["s"] != `on\u0000hold` || def.Set["n"] != any(json.Number("1.50")) || def.Set["b"] != true {
		t.Fatalf("ParseChange: %+v, %v", def, err)
	}
}

// Issue 35 item 16 at the Go face: DefineChange and RegisterChange refuse
// \u0000 in a value built in Go, naming the field, before anything is
// written; an operator or a viewer that defines or drops a change is told
// that only the schema's owner may (*driver.OwnerError), not to ask for a
// grant.
func TestDriverChangeInputRefusals(t *testing.T) {
	t.Parallel()
	r := newRoles(t)
	shop := r.Schema.UserSchema(t, paymentsSQL)
	r.Schema.Exec(t, "grant usage on schema "+shop+" to "+r.owner.Name)
	r.Schema.Exec(t, "grant select, update on "+shop+".payments to "+r.owner.Name)
	owner, op, viewer := r.connect(t, r.owner), r.connect(t, r.operator), r.connect(t, r.viewer)
	def, err := driver.ParseChange(strings.NewReader(pgtest.HoldPayment(shop)))
	if err != nil {
		t.Fatal(err)
	}

	nul := def
	nul.Set = map[string]any{"status": "on\x00hold"}
	if _, err := driver.DefineChange(ctx, owner, nul); !errors.Is(err, driver.ErrInvalid) ||
		err.Error() != `invalid: set.status: must not contain \u0000 (PostgreSQL text cannot store it)` {
		t.Fatalf("DefineChange with \\u0000: %v", err)
	}
	nothingDefined(t, r.Schema)

	for _, c := range []struct {
		conn *pgx.Conn
		role string
	}{{op, r.operator.Name}, {viewer, r.viewer.Name}} {
		_, err := driver.DefineChange(ctx, c.conn, def)
		wantOwnerError(t, err, "define", r.Name, r.owner.Name, c.role)
		nothingDefined(t, r.Schema)
		_, err = driver.DropChange(ctx, c.conn, "hold_payment")
		wantOwnerError(t, err, "drop", r.Name, r.owner.Name, c.role)
	}

	if created, err := driver.DefineChange(ctx, owner, def); err != nil || !created {
		t.Fatalf("DefineChange by the owner: %v, %v", created, err)
	}
	plan := driver.ChangePlan{JobID: "p1", Tenant: "7", ChunkSize: 2, AllowPartial: true, Targets: []map[string]any{
		{"payment_id": 1, "lock_version": 3, "amount_cents": 100, "reason": "fr\x00aud"},
	}}
	for _, call := range []func() error{
		func() error { _, err := driver.RegisterChange(ctx, op, "hold_payment", plan); return err },
		func() error { _, err := driver.CheckChange(ctx, op, "hold_payment", plan); return err },
	} {
		if err := call(); !errors.Is(err, driver.ErrInvalid) ||
			err.Error() != `invalid: targets[0].reason: must not contain \u0000 (PostgreSQL text cannot store it)` {
			t.Fatalf("a target with \\u0000: %v", err)
		}
	}
	if got := pgtest.MustString(t, r.Schema.Conn, "select count(*)::text from jobs"); got != "0" {
		t.Fatalf("%s jobs", got)
	}
}

// wantOwnerError fails unless err is a *driver.OwnerError of action by role
// on schema (owned by owner), reading as one, that still unwraps to the
// server's 42501.
func wantOwnerError(t testing.TB, err error, action, schema, owner, role string) {
	t.Helper()
	var oe *driver.OwnerError
	var pgErr *pgconn.PgError
	want := "permission denied to " + action + " a change in schema " + schema + " (SQLSTATE 42501): only its owner (" + owner +
		"), or a member of that role, may define or drop a change, and role " + role + " is neither; chunks grant gives no such right"
	if !errors.As(err, &oe) || oe.Action != action || oe.Schema != schema || oe.Owner != owner || oe.Role != role || err.Error() != want {
		t.Fatalf("want an OwnerError:\n%s\ngot %#v: %v", want, oe, err)
	}
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Fatalf("the OwnerError does not unwrap to the server's 42501: %v", err)
	}
}
