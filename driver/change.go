package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"time"
)

// ChangeDefinition is a declared change of one of the user's own tables
// (docs/your-own-tables.md), as define_change takes it: data, never SQL.
// The server checks it against the catalog; the json names are the
// interface.
type ChangeDefinition struct {
	Name          string            `json:"name"`                      // ^[a-z][a-z0-9_]{0,39}$
	Table         string            `json:"table"`                     // "schema.table"
	Key           KeyColumns        `json:"key"`                       // a unique key's columns: one (a JSON string) or a list
	Tenant        string            `json:"tenant,omitempty"`          // a column that must equal the plan's tenant
	Version       string            `json:"version,omitempty"`         // an integer column each target pins; the change adds 1
	Expect        []string          `json:"expect,omitempty"`          // columns each target pins
	When          map[string]any    `json:"when,omitempty"`            // column -> constant the row must have now, a list (one of them) or nil (NULL)
	Set           map[string]any    `json:"set,omitempty"`             // column -> constant written
	SetFromTarget map[string]string `json:"set_from_target,omitempty"` // column -> target field carrying its new value
	SetNow        []string          `json:"set_now,omitempty"`         // columns set to the chunk's transaction time
	// Delete makes the change delete its rows instead of setting columns
	// (then Set, SetFromTarget and SetNow are empty): each deleted row's
	// full image is audited, and inserted into Archive ("schema.table",
	// with exactly the table's columns) when it names one.
	Delete  bool   `json:"delete,omitempty"`
	Archive string `json:"archive,omitempty"`
	// Cascade names the child tables ("schema.table") whose foreign key
	// to the table is ON DELETE CASCADE: their rows deleted with a parent
	// are audited with it, and put back by its undo.
	Cascade []string `json:"cascade,omitempty"`
}

// ChangeSummary is one declared change as [Changes] lists it.
type ChangeSummary struct {
	Name      string    `json:"name"`
	Table     string    `json:"table"`
	Digest    string    `json:"digest"` // sha256 (hex) of the definition's canonical jsonb text
	DefinedAt time.Time `json:"defined_at"`
	DefinedBy string    `json:"defined_by"`
	Jobs      int64     `json:"jobs"` // jobs registered with the change
}

// ChangeInfo is one declared change as [ShowChange] shows it for review:
// its definition and the source of its generated function.
type ChangeInfo struct {
	Name       string           `json:"name"`
	Definition ChangeDefinition `json:"definition"`
	Digest     string           `json:"digest"`
	DefinedAt  time.Time        `json:"defined_at"`
	DefinedBy  string           `json:"defined_by"`
	Jobs       int64            `json:"jobs"`
	Function   string           `json:"function"` // the generated function's name, apply_<name>
	Source     *string          `json:"source"`   // its CREATE FUNCTION text (pg_get_functiondef); nil when it is gone
}

// ChangePlan is a job of a declared change: the five keys of a [Plan],
// with targets whose fields are exactly the change's key, version, expect
// and set_from_target fields (the server checks them against the change).
type ChangePlan struct {
	JobID        string           `json:"job_id"`
	Tenant       string           `json:"tenant"`
	Targets      []map[string]any `json:"targets"`
	ChunkSize    int              `json:"chunk_size"`
	AllowPartial bool             `json:"allow_partial"`
}

// changeName is the rule of a change's name, as define_change has it.
var changeName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// CheckChangeName returns an [ErrInvalid] naming the field name unless
// name is a change's name (1 to 40 of a-z, 0-9, _, starting with a letter).
func CheckChangeName(name string) error { return checkChangeName("name", name) }

// Validate checks what needs no database of a job of the declared change
// (as [RegisterChange] and [CheckChange] do first), naming the field.
func (plan ChangePlan) Validate(change string) error {
	_, err := plan.check(change)
	return err
}

// checkChangeName returns an [ErrInvalid] naming field unless name is a
// change's name.
func checkChangeName(field, name string) error {
	if !changeName.MatchString(name) {
		return Invalidf("%s: must be 1 to 40 lower-case ASCII letters, digits or _, starting with a letter, got %s", field, Excerpt(name, true))
	}
	return nil
}

// ParseChange reads a change definition (a JSON file) strictly: one JSON
// object of at most [MaxInputBytes], no field ChangeDefinition does not
// name (an [ErrInvalid] "definition: unknown field ..."), no key twice at
// any depth ("set: duplicate key ..."), each field of its kind (one column
// for the key: composite keys are not supported yet), no \u0000, which
// PostgreSQL text cannot store; numbers kept as written. Each refusal
// names the field.
func ParseChange(r io.Reader) (ChangeDefinition, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInputBytes+1))
	if err != nil {
		return ChangeDefinition{}, err
	}
	if len(data) > MaxInputBytes {
		return ChangeDefinition{}, Invalidf("definition: is larger than the 1 MiB limit (at most %d bytes)", MaxInputBytes)
	}
	v, err := decodeStrict("definition", data, nil)
	if err != nil {
		return ChangeDefinition{}, err
	}
	obj, ok := v.(*object)
	if !ok {
		return ChangeDefinition{}, Invalidf("definition: must be an object, got %s", describe(v))
	}
	var def ChangeDefinition
	for _, k := range obj.keys {
		if err := def.setField(k, obj.vals[k]); err != nil {
			return ChangeDefinition{}, err
		}
	}
	return def, def.checkText()
}

// setField sets the field key of def to v, a value of decodeStrict,
// checking its kind.
func (def *ChangeDefinition) setField(key string, v any) error {
	switch key {
	case "key":
		switch k := v.(type) {
		case string:
			def.Key = KeyColumns{Columns: []string{k}}
		case []any:
			cols := make([]string, len(k))
			for i, e := range k {
				var ok bool
				if cols[i], ok = e.(string); !ok {
					return Invalidf("key[%d]: must be a column name (a string), got %s", i, describe(e))
				}
			}
			if len(cols) == 0 {
				return Invalidf("key: must be a column name or a non-empty list of column names, got an empty list")
			}
			def.Key = KeyColumns{Columns: cols, List: true}
		default:
			return Invalidf("key: must be a column name or a non-empty list of column names, got %s", describe(v))
		}
	case "delete":
		b, ok := v.(bool)
		if !ok || !b {
			return Invalidf("delete: must be true (leave it out for a change that updates), got %s", describe(v))
		}
		def.Delete = true
	case "name", "table", "tenant", "version", "archive":
		s, ok := v.(string)
		if !ok {
			return Invalidf("%s: must be a string, got %s", key, describe(v))
		}
		switch key {
		case "name":
			def.Name = s
		case "table":
			def.Table = s
		case "tenant":
			def.Tenant = s
		case "archive":
			def.Archive = s
		default:
			def.Version = s
		}
	case "expect", "set_now", "cascade":
		what := "column name"
		if key == "cascade" {
			what = "table name (schema.table)"
		}
		list, ok := v.([]any)
		if !ok {
			return Invalidf("%s: must be a list of %ss, got %s", key, what, describe(v))
		}
		names := make([]string, len(list))
		for i, e := range list {
			if names[i], ok = e.(string); !ok {
				return Invalidf("%s[%d]: must be a %s (a string), got %s", key, i, what, describe(e))
			}
		}
		switch key {
		case "expect":
			def.Expect = names
		case "cascade":
			def.Cascade = names
		default:
			def.SetNow = names
		}
	case "when", "set":
		obj, ok := v.(*object)
		if !ok {
			return Invalidf("%s: must be an object of column: constant, got %s", key, describe(v))
		}
		m := make(map[string]any, len(obj.keys))
		for _, k := range obj.keys {
			c, err := changeConstant(key, k, obj.vals[k])
			if err != nil {
				return err
			}
			m[k] = c
		}
		if key == "when" {
			def.When = m
		} else {
			def.Set = m
		}
	case "set_from_target":
		obj, ok := v.(*object)
		if !ok {
			return Invalidf("set_from_target: must be an object of column: target field, got %s", describe(v))
		}
		def.SetFromTarget = make(map[string]string, len(obj.keys))
		for _, k := range obj.keys {
			if def.SetFromTarget[k], ok = obj.vals[k].(string); !ok {
				return Invalidf("set_from_target.%s: must be a target field's name (a string), got %s", Excerpt(k, false), describe(obj.vals[k]))
			}
		}
	default:
		return Invalidf("definition: unknown field %s", Excerpt(key, true))
	}
	return nil
}

// changeConstant is v, the value of column col in field (when or set),
// when it is of a kind the field takes: a string, number or boolean
// constant; in when also a list of them (one of them) or null (IS NULL).
func changeConstant(field, col string, v any) (any, error) {
	switch c := v.(type) {
	case string, bool, json.Number:
		return c, nil
	case nil:
		if field == "when" {
			return nil, nil
		}
	case []any:
		if field != "when" {
			break
		}
		if len(c) == 0 {
			return nil, Invalidf("when.%s: a list must hold at least one value", Excerpt(col, false))
		}
		for i, e := range c {
			switch e.(type) {
			case string, bool, json.Number:
			default:
				return nil, Invalidf("when.%s[%d]: must be a string, number or boolean constant, got %s", Excerpt(col, false), i, describe(e))
			}
		}
		return c, nil
	}
	if field == "when" {
		return nil, Invalidf("when.%s: must be a string, number or boolean constant, a list of them, or null, got %s", Excerpt(col, false), describe(v))
	}
	return nil, Invalidf("%s.%s: must be a string, number or boolean constant, got %s", field, Excerpt(col, false), describe(v))
}

// checkText refuses \u0000 in any text of def, naming the field:
// PostgreSQL text (and so jsonb) cannot store it.
func (def ChangeDefinition) checkText() error {
	for _, f := range []struct{ name, value string }{
		{"name", def.Name}, {"table", def.Table}, {"tenant", def.Tenant}, {"version", def.Version}, {"archive", def.Archive},
	} {
		if err := checkNUL(f.name, f.value); err != nil {
			return err
		}
	}
	for _, l := range []struct {
		name  string
		names []string
	}{{"key", def.Key.Columns}, {"expect", def.Expect}, {"set_now", def.SetNow}, {"cascade", def.Cascade}} {
		for i, e := range l.names {
			if err := checkNUL(fmt.Sprintf("%s[%d]", l.name, i), e); err != nil {
				return err
			}
		}
	}
	for _, m := range []struct {
		name   string
		values map[string]any
	}{{"when", def.When}, {"set", def.Set}} {
		if err := checkNULs(m.name, m.values); err != nil {
			return err
		}
	}
	fromTarget := make(map[string]any, len(def.SetFromTarget))
	for k, v := range def.SetFromTarget {
		fromTarget[k] = v
	}
	return checkNULs("set_from_target", fromTarget)
}

// DefineChange declares def with the server's define_change: true when it
// is new, false when the same definition is already there. The server
// checks it against the catalog ([ErrInvalid] naming the table, column or
// constant at fault) and generates its static function; another definition
// under the same name is an [ErrConflict], also when another session
// defines the name at the same time. \u0000 in any text of def is an
// [ErrInvalid] naming the field, before anything is sent. Only the owner of
// the chunks schema may define a change: any other role gets an
// [*OwnerError] (SQLSTATE 42501).
func DefineChange(ctx context.Context, db DB, def ChangeDefinition) (bool, error) {
	if err := checkChangeName("name", def.Name); err != nil {
		return false, err
	}
	if err := def.checkText(); err != nil {
		return false, err
	}
	body, err := json.Marshal(def)
	if err != nil {
		return false, err
	}
	var created bool
	if err := db.QueryRow(ctx, "select define_change($1::jsonb)", string(body)).Scan(&created); err != nil {
		return false, explainOwnerOnly(ctx, db, MapError(err), "define")
	}
	return created, nil
}

// Changes lists the declared changes by name (SQL change_list).
func Changes(ctx context.Context, db DB) ([]ChangeSummary, error) {
	var list []ChangeSummary
	if _, err := QueryJSON(ctx, db, &list, "change_list"); err != nil {
		return nil, err
	}
	return list, nil
}

// ShowChange returns the declared change name with its generated source,
// or nil (and no error) when there is no such change (SQL change_show).
func ShowChange(ctx context.Context, db DB, name string) (*ChangeInfo, error) {
	if err := checkChangeName("name", name); err != nil {
		return nil, err
	}
	var info ChangeInfo
	if found, err := QueryJSON(ctx, db, &info, "change_show", name); err != nil || !found {
		return nil, err
	}
	return &info, nil
}

// DropChange drops the declared change name and its generated function:
// true when it was there, false when there is no such change. It is an
// [ErrConflict] while any job of the change exists. Only the owner of the
// chunks schema may drop a change: any other role gets an [*OwnerError].
func DropChange(ctx context.Context, db DB, name string) (bool, error) {
	if err := checkChangeName("name", name); err != nil {
		return false, err
	}
	var dropped bool
	if err := db.QueryRow(ctx, "select drop_change($1)", name).Scan(&dropped); err != nil {
		return false, explainOwnerOnly(ctx, db, MapError(err), "drop")
	}
	return dropped, nil
}

// ChangeRetired is what [RetireChange] answers (SQL retire_change).
type ChangeRetired struct {
	Name   string `json:"name"`
	Digest string `json:"digest"` // the retired version's
	Jobs   int    `json:"jobs"`   // its jobs, which still report
}

// RetireChange retires the declared change name once every job of it has
// ended (finished, abandoned or archived; otherwise an [ErrConflict]): its
// generated functions are dropped, and its definition and digest stay, so
// its jobs still report and verify by the definition they were approved
// under (they never run again, nor undo). A new definition under the name
// is then a new version. Only the owner of the chunks schema may retire a
// change: any other role gets an [*OwnerError].
func RetireChange(ctx context.Context, db DB, name string) (ChangeRetired, error) {
	if err := checkChangeName("name", name); err != nil {
		return ChangeRetired{}, err
	}
	var r ChangeRetired
	if _, err := QueryJSON(ctx, db, &r, "retire_change", name); err != nil {
		return ChangeRetired{}, explainOwnerOnly(ctx, db, err, "retire")
	}
	return r, nil
}

// RegisterChange records a job of the declared change with the server's
// register_change: true when the job is new, false when the same approval
// is already registered; a different job under the same id is an
// [ErrConflict]. What needs no database is checked first, with Register's
// messages (job_id, tenant, the number of targets, chunk_size,
// allow_partial), and \u0000 in a target ("targets[3].reason"); the server
// checks the targets against the change and stores them sorted by key. A
// router routes it by the plan's tenant.
func RegisterChange(ctx context.Context, db DB, change string, plan ChangePlan) (bool, error) {
	body, err := plan.check(change)
	if err != nil {
		return false, err
	}
	var created bool
	if err := db.QueryRow(ctx, "select register_change($1, $2::jsonb)", change, body).Scan(&created); err != nil {
		return false, MapError(err)
	}
	return created, nil
}

// check checks what needs no database, with Register's messages (the
// change's name, job_id, tenant, the number of targets, chunk_size,
// allow_partial), and returns the plan as JSON text for the server.
func (plan ChangePlan) check(change string) (string, error) {
	if err := checkChangeName("change", change); err != nil {
		return "", err
	}
	if err := checkName("job_id", plan.JobID); err != nil {
		return "", err
	}
	if err := checkName("tenant", plan.Tenant); err != nil {
		return "", err
	}
	if len(plan.Targets) == 0 || len(plan.Targets) > MaxChangeTargets {
		return "", Invalidf("targets: must be a list of 1 to %d targets, got %d", MaxChangeTargets, len(plan.Targets))
	}
	if err := checkChunkSize(int64(plan.ChunkSize), MaxChangeChunkSize); err != nil {
		return "", err
	}
	if !plan.AllowPartial {
		return "", Invalidf("allow_partial: must be true (each chunk commits on its own), got false")
	}
	for i, target := range plan.Targets {
		if err := checkNULs(fmt.Sprintf("targets[%d]", i), target); err != nil {
			return "", err
		}
	}
	body, err := json.Marshal(plan)
	if err != nil {
		return "", err
	}
	return string(body), nil
}

// ChangeCheck is the preflight of a job of a declared change
// ([CheckChange], SQL check_change), in [PlanCheck]'s shape: Job is
// [JobFree], [JobRegistered] or [JobConflict] (JobProblem says why), and
// each target, in key order, is OK when its row would take the change now.
type ChangeCheck struct {
	JobID      string              `json:"job_id"`
	OK         bool                `json:"ok"`
	Job        string              `json:"job"`
	JobProblem string              `json:"job_problem"`
	Targets    []ChangeTargetCheck `json:"targets"`
}

// ChangeTargetCheck is one target of a [ChangeCheck]: its key (a number, a
// string, or an object of the columns of a composite key);
// Problem in the words of the conflict its chunk would raise
// ("payment_id 42: lock_version is 4, approved 3"); Committed for a target
// the registered job has already changed.
type ChangeTargetCheck struct {
	Key       Key    `json:"key"`
	OK        bool   `json:"ok"`
	Problem   string `json:"problem"`
	Committed bool   `json:"committed"`
}

// CheckChange is the preflight of plan, a job of the declared change:
// validated as [RegisterChange] validates it, then judged on the server
// without locking or writing anything. A plan that would not apply is not
// an error: it is the answer, with OK false.
func CheckChange(ctx context.Context, db DB, change string, plan ChangePlan) (ChangeCheck, error) {
	body, err := plan.check(change)
	if err != nil {
		return ChangeCheck{}, err
	}
	var c ChangeCheck
	if _, err := QueryJSON(ctx, db, &c, "check_change", change, body); err != nil {
		return ChangeCheck{}, err
	}
	return c, nil
}
