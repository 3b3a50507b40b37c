package tests

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// writerOf is the writer role of the chunks schema s, quoted.
func writerOf(t testing.TB, s *pgtest.Schema) string {
	t.Helper()
	var w string
	if err := s.Conn.QueryRow(ctx, "select quote_ident(role) from "+s.Name+".change_writer").Scan(&w); err != nil {
		t.Fatalf("the writer of %s: %v", s.Name, err)
	}
	return w
}

// paymentsSQL is shop.payments of the issue, with a trigger that counts
// the updates of each row.
const paymentsSQL = `
create table %[1]s.payments(payment_id bigint primary key, merchant_id integer not null, status text not null,
  amount_cents integer not null, hold_reason text, lock_version integer not null default 0,
  ref text not null, code numeric not null unique, total integer generated always as (amount_cents * 2) stored,
  seq bigint generated always as identity);
create unique index on %[1]s.payments(ref) where status <> 'void';
create table %[1]s.payment_updates(payment_id bigint, n integer);
create function %[1]s.count_update() returns trigger language plpgsql as $t$
begin
  insert into %[1]s.payment_updates values (new.payment_id, 1);
  return new;
end
$t$;
create trigger counted after update on %[1]s.payments for each row execute function %[1]s.count_update();
insert into %[1]s.payments select g, 7, 'captured', 100 * g, null, 3, 'r' || g, g from generate_series(1, 5) g;`

// paymentTargets are targets of hold_payment for payments ids (lock_version 3).
func paymentTargets(ids ...int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf(`{"payment_id": %d, "lock_version": 3, "amount_cents": %d, "reason": "chargeback's #%d"}`, id, 100*id, id)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func changePlan(jobID, tenant, targets string, chunkSize int) string {
	return fmt.Sprintf(`{"job_id": %q, "tenant": %q, "targets": %s, "chunk_size": %d, "allow_partial": true}`, jobID, tenant, targets, chunkSize)
}

// A declared change on shop.payments end to end: defined once (the same
// definition again is a no-op, another one CH409), a job of it registered
// (targets sorted by key), every chunk run through run_chunk, each row
// changed once (its trigger fired once), one change_audit row each with the
// before and after of every written column.
func TestChangePayments(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	if !pgtest.MustBool(t, s.Conn, "select define_change($1)", pgtest.HoldPayment(shop)) {
		t.Fatal("define_change: false for a new change")
	}
	if pgtest.MustBool(t, s.Conn, "select define_change($1)", pgtest.HoldPayment(shop)) {
		t.Fatal("define_change: true for the same definition again")
	}
	_, err := pgtest.TryString(s.Conn, "select define_change($1)::text", strings.Replace(pgtest.HoldPayment(shop), "on_hold", "held", 1))
	pgtest.WantPgError(t, err, "CH409", "change hold_payment: already defined with a different definition (chunks change show hold_payment)")

	p1 := changePlan("p1", "7", paymentTargets(4, 2, 1, 3), 2)
	if !pgtest.MustBool(t, s.Conn, "select register_change('hold_payment', $1)", p1) {
		t.Fatal("register_change: false for a new job")
	}
	if pgtest.MustBool(t, s.Conn, "select register_change('hold_payment', $1)", p1) {
		t.Fatal("register_change: true for the same plan again")
	}
	_, err = pgtest.TryString(s.Conn, "select register_change('hold_payment', $1)::text", changePlan("p1", "7", paymentTargets(4, 2, 1), 2))
	pgtest.WantPgError(t, err, "CH409", "job p1: already registered with different targets")
	sameJSON(t, "stored targets", pgtest.MustString(t, s.Conn, "select job_targets('p1')::text"), paymentTargets(1, 2, 3, 4))

	for i, want := range []string{
		`{"processed": [1, 2], "next_index": 2, "done": false}`,
		`{"processed": [3, 4], "next_index": 4, "done": true}`,
		`{"processed": [], "next_index": 4, "done": true}`,
	} {
		sameJSON(t, fmt.Sprintf("chunk %d", i), pgtest.MustString(t, s.Conn, "select run_chunk('p1')::text"), want)
	}
	sameJSON(t, "payments", pgtest.MustString(t, s.Conn, fmt.Sprintf(`select jsonb_agg(jsonb_build_array(payment_id, status, hold_reason, lock_version) order by payment_id)::text from %s.payments`, shop)),
		`[[1, "on_hold", "chargeback's #1", 4], [2, "on_hold", "chargeback's #2", 4], [3, "on_hold", "chargeback's #3", 4],
		  [4, "on_hold", "chargeback's #4", 4], [5, "captured", null, 3]]`)
	sameJSON(t, "triggers", pgtest.MustString(t, s.Conn, fmt.Sprintf(`select jsonb_object_agg(payment_id, n)::text from (select payment_id, sum(n) as n from %s.payment_updates group by 1) x`, shop)),
		`{"1": 1, "2": 1, "3": 1, "4": 1}`)
	sameJSON(t, "audit", pgtest.MustString(t, s.Conn, `select jsonb_agg(jsonb_build_array(ordinal, key, version_before, version_after, before, after) order by ordinal)::text from change_audit where job_id = 'p1'`),
		`[[0, "1", 3, 4, {"status": "captured", "hold_reason": null}, {"status": "on_hold", "hold_reason": "chargeback's #1"}],
		  [1, "2", 3, 4, {"status": "captured", "hold_reason": null}, {"status": "on_hold", "hold_reason": "chargeback's #2"}],
		  [2, "3", 3, 4, {"status": "captured", "hold_reason": null}, {"status": "on_hold", "hold_reason": "chargeback's #3"}],
		  [3, "4", 3, 4, {"status": "captured", "hold_reason": null}, {"status": "on_hold", "hold_reason": "chargeback's #4"}]]`)

	// report: every committed row matching, then drift made by hand: a
	// written value changed, the version moved, a row gone.
	sameJSON(t, "report", pgtest.MustString(t, s.Conn, "select report('p1')::text"),
		`{"approved": [1, 2, 3, 4], "committed": [1, 2, 3, 4], "remaining": [], "matching": [1, 2, 3, 4], "drifted": [], "missing": []}`)
	s.Exec(t, "update "+shop+".payments set hold_reason = 'other' where payment_id = 1")
	s.Exec(t, "update "+shop+".payments set lock_version = 5 where payment_id = 2")
	s.Exec(t, "delete from "+shop+".payments where payment_id = 4")
	sameJSON(t, "report after drift", pgtest.MustString(t, s.Conn, "select report('7', 'p1')::text"),
		`{"approved": [1, 2, 3, 4], "committed": [1, 2, 3, 4], "remaining": [], "matching": [3], "drifted": [1, 2], "missing": [4]}`)
	// The row is as the job left it only with its approved expect values and
	// its job's tenant too (report's one rule, as for an order's qty).
	for _, edit := range []string{
		"update " + shop + ".payments set amount_cents = 301 where payment_id = 3",
		"update " + shop + ".payments set amount_cents = 300, merchant_id = 8 where payment_id = 3",
	} {
		s.Exec(t, edit)
		sameJSON(t, edit, pgtest.MustString(t, s.Conn, "select report('7', 'p1')::text"),
			`{"approved": [1, 2, 3, 4], "committed": [1, 2, 3, 4], "remaining": [], "matching": [], "drifted": [1, 2, 3], "missing": [4]}`)
	}
	s.Exec(t, "update "+shop+".payments set merchant_id = 7 where payment_id = 3")
	sameJSON(t, "report with row 3 as the job left it", pgtest.MustString(t, s.Conn, "select report('7', 'p1')::text"),
		`{"approved": [1, 2, 3, 4], "committed": [1, 2, 3, 4], "remaining": [], "matching": [3], "drifted": [1, 2], "missing": [4]}`)
	// register of its id is a conflict (its undo: TestChangeUndoPayments).
	_, err = pgtest.TryString(s.Conn, "select register($1)::text", plan("p1", "7", 1, 2, 1))
	pgtest.WantPgError(t, err, "CH409", "job p1: already registered as a job of a declared change (register_change)")

	// Drop is refused while a job of the change exists.
	_, err = pgtest.TryString(s.Conn, "select drop_change('hold_payment')::text")
	pgtest.WantPgError(t, err, "CH409", "change hold_payment: 1 job of it exists; a change is dropped only when none does")
}

// nothingDefined fails unless schema s has no declared change and no
// generated function.
func nothingDefined(t testing.TB, s *pgtest.Schema) {
	t.Helper()
	if got := pgtest.MustString(t, s.Conn, `select (select count(*) from changes) || '/' ||
	    (select count(*) from pg_proc where pronamespace = $1::regnamespace and proname ~ '^(apply|restore|preview)_')`, s.Name); got != "0/0" {
		t.Fatalf("changes/generated functions: %s, want 0/0", got)
	}
}

// definitionWith is holdPayment on shop with the fields of set replaced
// (a nil value removes the field).
func definitionWith(t testing.TB, shop string, set map[string]any) string {
	t.Helper()
	var def map[string]any
	if err := json.Unmarshal([]byte(pgtest.HoldPayment(shop)), &def); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		if v == nil {
			delete(def, k)
		} else {
			def[k] = v
		}
	}
	b, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Define time (issue 25, item 1): every refusal names the field, table,
// column or constant at fault (22023), and nothing is created.
func TestChangeDefineRefusals(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL+`; alter table %[1]s.payments add column spot point not null default point(0, 0);
	  create unique index on %[1]s.payments(payment_id, lock_version)`)
	p := shop + ".payments"
	for _, c := range []struct {
		name string
		def  string
		msg  string
	}{
		{"not an object", `[]`, "definition: must be an object, got array"},
		{"unknown field", definitionWith(t, shop, map[string]any{"sets": map[string]any{}}), `definition: unknown field "sets"`},
		{"no name", definitionWith(t, shop, map[string]any{"name": nil}), "definition: missing field name"},
		{"name not a string", definitionWith(t, shop, map[string]any{"name": 1}), "name: must be a string, got number"},
		{"SQL in the name", definitionWith(t, shop, map[string]any{"name": "x(); drop table " + p + "; --"}),
			`name: must be 1 to 40 lower-case ASCII letters, digits or _, starting with a letter, got "x(); drop table ` + p + `; --"`},
		{"upper-case name", definitionWith(t, shop, map[string]any{"name": "Hold"}),
			`name: must be 1 to 40 lower-case ASCII letters, digits or _, starting with a letter, got "Hold"`},
		{"table not qualified", definitionWith(t, shop, map[string]any{"table": "payments"}), `table: must be schema.table, got "payments"`},
		{"no such table", definitionWith(t, shop, map[string]any{"table": shop + ".nope"}), `table: there is no table "` + shop + `.nope"`},
		{"system schema", definitionWith(t, shop, map[string]any{"table": "pg_catalog.pg_class"}),
			`table: "pg_catalog.pg_class" is in system schema pg_catalog`},
		{"chunks' own table", definitionWith(t, shop, map[string]any{"table": s.Name + ".orders"}),
			`table: "` + s.Name + `.orders" is one of chunks' own tables (schema ` + s.Name + `); declare changes of your own tables`},
		{"no key column", definitionWith(t, shop, map[string]any{"key": "id"}), `key: table ` + p + ` has no column "id"`},
		{"nullable key", definitionWith(t, shop, map[string]any{"key": "hold_reason"}), "key: column " + p + ".hold_reason may be NULL"},
		{"key of a type with no order", definitionWith(t, shop, map[string]any{"key": "spot"}),
			"key: column " + p + ".spot is point, which has no default btree operator class (no order to sort and lock its rows in)"},
		{"key list empty", definitionWith(t, shop, map[string]any{"key": []string{}}),
			"key: must be a column name or a non-empty list of column names, got []"},
		{"key list of a number", definitionWith(t, shop, map[string]any{"key": []any{"payment_id", 1}}),
			`key: must be a column name or a non-empty list of column names, got ["payment_id", 1]`},
		{"key column twice", definitionWith(t, shop, map[string]any{"key": []string{"payment_id", "payment_id"}}), "key: payment_id is named twice"},
		{"key columns not unique together", definitionWith(t, shop, map[string]any{"key": []string{"merchant_id", "status"}}),
			"key: columns (merchant_id, status) of " + p + " are not unique together (no primary key, unique constraint or non-partial unique index of exactly these columns)"},
		{"key columns a superset of a unique key", definitionWith(t, shop, map[string]any{"key": []string{"payment_id", "merchant_id"}}),
			"key: columns (payment_id, merchant_id) of " + p + " are not unique together (no primary key, unique constraint or non-partial unique index of exactly these columns)"},
		{"the version in the key", definitionWith(t, shop, map[string]any{"key": []string{"payment_id", "lock_version"}}),
			"version: lock_version is the key or the tenant"},
		{"key not unique", definitionWith(t, shop, map[string]any{"key": "merchant_id"}),
			"key: column " + p + ".merchant_id is not unique on its own (no primary key, unique constraint or non-partial unique index of exactly this column)"},
		{"key unique by a partial index", definitionWith(t, shop, map[string]any{"key": "ref"}),
			"key: column " + p + ".ref is not unique on its own (no primary key, unique constraint or non-partial unique index of exactly this column)"},
		{"no tenant column", definitionWith(t, shop, map[string]any{"tenant": "merchant"}), `tenant: table ` + p + ` has no column "merchant"`},
		{"version not an integer", definitionWith(t, shop, map[string]any{"version": "status"}),
			"version: column " + p + ".status is text, not smallint, integer or bigint"},
		{"no version, no expect", definitionWith(t, shop, map[string]any{"version": nil, "expect": []string{}}),
			"expect: must name at least one column when the change has no version"},
		{"no expect column", definitionWith(t, shop, map[string]any{"expect": []string{"amount"}}), `expect: table ` + p + ` has no column "amount"`},
		{"no when column", definitionWith(t, shop, map[string]any{"when": map[string]any{"state": "captured"}}), `when: table ` + p + ` has no column "state"`},
		{"when constant of another type", definitionWith(t, shop, map[string]any{"when": map[string]any{"amount_cents": "lots"}}),
			`when.amount_cents: constant "lots" is not a value of column ` + p + `.amount_cents (integer): invalid input syntax for type integer: "lots"`},
		{"set constant a list", definitionWith(t, shop, map[string]any{"set": map[string]any{"status": []int{}}}),
			"set.status: must be a string, number or boolean constant, got array"},
		{"set constant of another type", definitionWith(t, shop, map[string]any{"set": map[string]any{"lock_version": 1, "amount_cents": 1.5}}),
			`set.amount_cents: constant 1.5 is not a value of column ` + p + `.amount_cents (integer): invalid input syntax for type integer: "1.5"`},
		{"set the key", definitionWith(t, shop, map[string]any{"set": map[string]any{"payment_id": 1}}),
			"set: payment_id is the key, the tenant or the version, which a change never sets"},
		{"set the tenant", definitionWith(t, shop, map[string]any{"set": map[string]any{"merchant_id": 1}}),
			"set: merchant_id is the key, the tenant or the version, which a change never sets"},
		{"set the version", definitionWith(t, shop, map[string]any{"set": map[string]any{"lock_version": 1}}),
			"set: lock_version is the key, the tenant or the version, which a change never sets"},
		{"set a generated column", definitionWith(t, shop, map[string]any{"set": map[string]any{"total": 1}}), "set: column " + p + ".total is generated"},
		{"set an identity column", definitionWith(t, shop, map[string]any{"set": map[string]any{"seq": 1}}), "set: column " + p + ".seq is an identity column"},
		{"set_from_target the key", definitionWith(t, shop, map[string]any{"set_from_target": map[string]any{"payment_id": "new_id"}}),
			"set_from_target: payment_id is the key, the tenant or the version, which a change never sets"},
		{"set and set_from_target", definitionWith(t, shop, map[string]any{"set_from_target": map[string]any{"status": "new_status"}}),
			"set_from_target: status is in set too"},
		{"bad target field", definitionWith(t, shop, map[string]any{"set_from_target": map[string]any{"hold_reason": "Reason!"}}),
			`set_from_target.hold_reason: the target field must be 1 to 63 lower-case ASCII letters, digits or _, got "Reason!"`},
		{"target field taken", definitionWith(t, shop, map[string]any{"set_from_target": map[string]any{"hold_reason": "amount_cents"}}),
			"set_from_target.hold_reason: target field amount_cents is already the field of the key, the version or an expect column"},
		{"nothing written", definitionWith(t, shop, map[string]any{"set": nil, "set_from_target": nil}),
			"set: a change must write at least one column (set, set_from_target or set_now), or delete its rows (\"delete\": true)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := pgtest.TryString(s.Conn, "select define_change($1)::text", c.def)
			pgtest.WantPgError(t, err, "22023", c.msg)
			nothingDefined(t, s)
		})
	}
	// The payments are as they were: no definition ran anything.
	if got := pgtest.MustString(t, s.Conn, "select count(*)::text from "+p+" where status = 'captured' and hold_reason is null"); got != "5" {
		t.Fatalf("payments changed: %s captured", got)
	}
}

// Drift made by hand between chunks is refused (CH409) naming the key and
// the first column that differs, in order: missing, tenant, when, version,
// expect; the chunk writes nothing. Tampering with the change (redefined,
// dropped, its function dropped by hand) is refused too.
func TestChangeDriftAndTampering(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	p := shop + ".payments"
	s.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	s.Exec(t, "select register_change('hold_payment', $1)", changePlan("p1", "7", paymentTargets(1, 2, 3, 4, 5), 2))
	sameJSON(t, "first chunk", pgtest.MustString(t, s.Conn, "select run_chunk('p1')::text"), `{"processed": [1, 2], "next_index": 2, "done": false}`)
	audit := func() string {
		return pgtest.MustString(t, s.Conn, "select count(*)::text from change_audit where job_id = 'p1'")
	}
	for _, c := range []struct{ drift, undo, msg string }{
		{"update " + p + " set amount_cents = 999 where payment_id = 3", "update " + p + " set amount_cents = 300 where payment_id = 3",
			"payment_id 3: amount_cents is 999, approved 300"},
		{"update " + p + " set lock_version = 9 where payment_id = 3", "update " + p + " set lock_version = 3 where payment_id = 3",
			"payment_id 3: lock_version is 9, approved 3"},
		{"update " + p + " set status = 'refunded' where payment_id = 4", "update " + p + " set status = 'captured' where payment_id = 4",
			"payment_id 4: status is refunded, the change requires captured"},
		{"update " + p + " set merchant_id = 8 where payment_id = 4", "update " + p + " set merchant_id = 7 where payment_id = 4",
			"payment_id 4: belongs to another tenant"},
		{"update " + p + " set payment_id = 33 where payment_id = 3", "update " + p + " set payment_id = 3 where payment_id = 33",
			"payment_id 3: missing"},
	} {
		s.Exec(t, c.drift)
		_, err := pgtest.TryString(s.Conn, "select run_chunk('p1')::text")
		pgtest.WantPgError(t, err, "CH409", c.msg)
		if got := audit(); got != "2" {
			t.Fatalf("after %q: %s audit rows, want 2", c.drift, got)
		}
		s.Exec(t, c.undo)
	}
	if got := pgtest.MustString(t, s.Conn, "select count(*)::text from "+p+" where status = 'on_hold'"); got != "2" {
		t.Fatalf("%s payments on hold, want 2", got)
	}

	// Tampering: the change redefined, dropped, or its function dropped, by hand.
	const tampered = "job p1: its change hold_payment was redefined or dropped since it was approved"
	s.Exec(t, `update changes set definition = jsonb_set(definition, '{set,status}', '"void"'),
	             digest = encode(sha256(convert_to(jsonb_set(definition, '{set,status}', '"void"')::text, 'UTF8')), 'hex')`)
	_, err := pgtest.TryString(s.Conn, "select run_chunk('p1')::text")
	pgtest.WantPgError(t, err, "CH409", tampered)
	s.Exec(t, "create table saved as select * from changes")
	s.Exec(t, "delete from changes")
	_, err = pgtest.TryString(s.Conn, "select run_chunk('p1')::text")
	pgtest.WantPgError(t, err, "CH409", tampered)
	s.Exec(t, "insert into changes select * from saved")
	s.Exec(t, `update changes set definition = jsonb_set(definition, '{set,status}', '"on_hold"'),
	             digest = encode(sha256(convert_to(jsonb_set(definition, '{set,status}', '"on_hold"')::text, 'UTF8')), 'hex')`)
	s.Exec(t, "alter function apply_hold_payment(text, text, integer, jsonb) rename to apply_hold_payment_saved")
	_, err = pgtest.TryString(s.Conn, "select run_chunk('p1')::text")
	pgtest.WantPgError(t, err, "CH409", "job p1: change hold_payment cannot run: function "+s.Name+".apply_hold_payment(text, text, integer, jsonb) is gone")
	s.Exec(t, "alter function apply_hold_payment_saved(text, text, integer, jsonb) rename to apply_hold_payment")
	// A job's targets are written once: a rewrite is refused as it is made.
	rewrite := `update change_targets set target = jsonb_set(target, '{reason}', $1) where job_id = 'p1' and ordinal = 2 returning 'rewritten'`
	_, err = pgtest.TryString(s.Conn, rewrite, `"other"`)
	pgtest.WantPgError(t, err, "CH409", "change_targets: an approved job's targets are written once, by register; register a new job instead")
	// One made past that (the trigger disabled by the owner) is no longer
	// the approval: verify and report say so (a chunk proves its own range
	// and the job's progress, not the whole list: docs/contract.md).
	s.Exec(t, "alter table change_targets disable trigger written_once")
	pgtest.MustString(t, s.Conn, rewrite, `"other"`)
	sameJSON(t, "verify of a rewritten job", pgtest.MustString(t, s.Conn, "select verify_job('p1') - 'problem' || jsonb_build_object('says', verify_job('p1') ->> 'problem' like '%its targets were changed after register%')"),
		`{"job_id": "p1", "sound": false, "says": true, "targets": 5, "chunk_size": 2, "next_index": 2, "chunks": 1}`)
	_, err = pgtest.TryString(s.Conn, "select report('p1')::text")
	pgtest.WantPgErrorContaining(t, err, "CH409", "job p1: the stored job is no longer the registered approval: its targets were changed after register")
	pgtest.MustString(t, s.Conn, rewrite, `"chargeback's #3"`)
	s.Exec(t, "alter table change_targets enable trigger written_once")
	sameJSON(t, "verify", pgtest.MustString(t, s.Conn, "select verify_job('p1')::text"),
		`{"job_id": "p1", "sound": true, "problem": null, "targets": 5, "chunk_size": 2, "next_index": 2, "chunks": 1}`)
	// Restored, the job goes on, each row changed once.
	sameJSON(t, "second chunk", pgtest.MustString(t, s.Conn, "select run_chunk('p1')::text"), `{"processed": [3, 4], "next_index": 4, "done": false}`)
	sameJSON(t, "last chunk", pgtest.MustString(t, s.Conn, "select run_chunk('p1')::text"), `{"processed": [5], "next_index": 5, "done": true}`)
	if got := pgtest.MustString(t, s.Conn, "select count(*)::text || '/' || count(distinct key) from change_audit where job_id = 'p1'"); got != "5/5" {
		t.Fatalf("audit rows/keys: %s, want 5/5", got)
	}
	// An audit row removed by hand makes the stored job unsound: verify and
	// report say so.
	s.Exec(t, "delete from change_audit where job_id = 'p1' and ordinal = 3")
	sameJSON(t, "verify", pgtest.MustString(t, s.Conn, "select verify_job('p1')::text"),
		`{"job_id": "p1", "sound": false, "problem": "job p1: the stored job is not sound: its audit (change_audit) is not exactly targets[0:5]",
		  "targets": 5, "chunk_size": 2, "next_index": 5, "chunks": 3}`)
	_, err = pgtest.TryString(s.Conn, "select report('p1')::text")
	pgtest.WantPgError(t, err, "CH409", "job p1: the stored job is not sound: its audit (change_audit) is not exactly targets[0:5]")
	// A chunk proves the job's progress: next_index moved back by hand is
	// not where its last chunk ended.
	s.Exec(t, "update jobs set next_index = 4 where job_id = 'p1'")
	_, err = pgtest.TryString(s.Conn, "select run_chunk('p1')::text")
	pgtest.WantPgError(t, err, "CH409", "job p1: the stored job is not sound: next_index is 4, but its last committed chunk ended at 5 and change_audit has rows at or after 4")
	// ... and an audit row after it is found too.
	s.Exec(t, "update jobs set next_index = 5 where job_id = 'p1'")
	s.Exec(t, "delete from change_chunks where job_id = 'p1' and first_ordinal = 4")
	_, err = pgtest.TryString(s.Conn, "select run_chunk('p1')::text")
	pgtest.WantPgError(t, err, "CH409", "job p1: the stored job is not sound: next_index is 5, but its last committed chunk ended at 4")
}

// crm.contacts: a uuid key, no tenant, no version, expect on email; and
// catalog.prices: a text key, a numeric new price from each target, when on
// currency. A constant with quotes in it is written as it is.
func TestChangeContactsAndPrices(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	crm := s.UserSchema(t, `create table %[1]s.contacts(id uuid primary key, email text, opted_out boolean not null default false, note text);
	  insert into %[1]s.contacts values ('00000000-0000-0000-0000-00000000000a', 'a@example.com', false, null),
	                                    ('00000000-0000-0000-0000-00000000000b', null, false, null),
	                                    ('00000000-0000-0000-0000-00000000000c', 'c@example.com', false, null);`)
	cat := s.UserSchema(t, `create table %[1]s.prices(sku text primary key, price numeric(10, 2) not null, currency text not null);
	  insert into %[1]s.prices values ('sku-1', 10.00, 'EUR'), ('sku-2', 20.00, 'EUR'), ('sku-3', 30.00, 'USD');`)
	s.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": "opt_out", "table": "%s.contacts", "key": "id", "expect": ["email"],
	  "set": {"opted_out": true, "note": "it's \"done\" $$ $body$'); drop table %s.contacts; --"}}`, crm, crm))
	s.Exec(t, "select register_change('opt_out', $1)", changePlan("c1", "crm", `[
	  {"id": "00000000-0000-0000-0000-00000000000B", "email": null},
	  {"id": "00000000-0000-0000-0000-00000000000a", "email": "a@example.com"}]`, 10))
	// The fleet's pass (chunks worker) reads a chunk of uuid keys.
	pass, err := fleet.RunNext(ctx, s.Conn, "w1", fleet.PassOptions{Retry: time.Second})
	if err != nil || pass == nil || pass.JobID != "c1" || !pass.Done || pass.Err != "" ||
		!slices.Equal(pass.Processed, []driver.Key{driver.TextKey("00000000-0000-0000-0000-00000000000a"), driver.TextKey("00000000-0000-0000-0000-00000000000b")}) {
		t.Fatalf("RunNext: %+v, %v", pass, err)
	}
	sameJSON(t, "contacts", pgtest.MustString(t, s.Conn, "select jsonb_agg(jsonb_build_array(right(id::text, 1), opted_out, note) order by id)::text from "+crm+".contacts"),
		fmt.Sprintf(`[["a", true, "it's \"done\" $$ $body$'); drop table %[1]s.contacts; --"], ["b", true, "it's \"done\" $$ $body$'); drop table %[1]s.contacts; --"], ["c", false, null]]`, crm))
	sameJSON(t, "contacts audit", pgtest.MustString(t, s.Conn, "select jsonb_agg(jsonb_build_array(key, version_before, before) order by ordinal)::text from change_audit where job_id = 'c1'"),
		`[["00000000-0000-0000-0000-00000000000a", null, {"note": null, "opted_out": false}], ["00000000-0000-0000-0000-00000000000b", null, {"note": null, "opted_out": false}]]`)

	s.Exec(t, "update "+crm+".contacts set note = null where right(id::text, 1) = 'b'")
	sameJSON(t, "contacts report", pgtest.MustString(t, s.Conn, "select report('c1')::text"), `{"approved": ["00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"],
	  "committed": ["00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"], "remaining": [],
	  "matching": ["00000000-0000-0000-0000-00000000000a"], "drifted": ["00000000-0000-0000-0000-00000000000b"], "missing": []}`)

	s.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": "reprice", "table": "%s.prices", "key": "sku", "expect": ["price"],
	  "when": {"currency": "EUR"}, "set_from_target": {"price": "new_price"}}`, cat))
	s.Exec(t, "select register_change('reprice', $1)", changePlan("r1", "shop", `[
	  {"sku": "sku-2", "price": 20, "new_price": 21.5}, {"sku": "sku-1", "price": 10.00, "new_price": 11.25}]`, 1))
	for _, want := range []string{`{"processed": ["sku-1"], "next_index": 1, "done": false}`, `{"processed": ["sku-2"], "next_index": 2, "done": true}`} {
		sameJSON(t, "reprice", pgtest.MustString(t, s.Conn, "select run_chunk('r1')::text"), want)
	}
	sameJSON(t, "prices", pgtest.MustString(t, s.Conn, "select jsonb_agg(jsonb_build_array(sku, price) order by sku)::text from "+cat+".prices"),
		`[["sku-1", 11.25], ["sku-2", 21.50], ["sku-3", 30.00]]`)
	sameJSON(t, "prices audit", pgtest.MustString(t, s.Conn, "select jsonb_agg(jsonb_build_array(key, before, after) order by ordinal)::text from change_audit where job_id = 'r1'"),
		`[["sku-1", {"price": 10.00}, {"price": 11.25}], ["sku-2", {"price": 20.00}, {"price": 21.50}]]`)
	// when: a USD price is refused, naming the key and the column.
	s.Exec(t, "select register_change('reprice', $1)", changePlan("r2", "shop", `[{"sku": "sku-3", "price": 30, "new_price": 31}]`, 1))
	_, err = pgtest.TryString(s.Conn, "select run_chunk('r2')::text")
	pgtest.WantPgError(t, err, "CH409", "sku sku-3: currency is USD, the change requires EUR")

	sameJSON(t, "prices report", pgtest.MustString(t, s.Conn, "select report('r1')::text"),
		`{"approved": ["sku-1", "sku-2"], "committed": ["sku-1", "sku-2"], "remaining": [], "matching": ["sku-1", "sku-2"], "drifted": [], "missing": []}`)
	// change_show has the definition and the generated source for review.
	show := pgtest.MustString(t, s.Conn, "select change_show('reprice')::text")
	for _, want := range []string{`"jobs": 2`, `"function": "apply_reprice"`, "CREATE OR REPLACE FUNCTION " + s.Name + ".apply_reprice", "SECURITY DEFINER", "for update of r"} {
		if !strings.Contains(show, want) {
			t.Errorf("change_show lacks %q:\n%s", want, show)
		}
	}
	if strings.Contains(show, "EXECUTE") {
		t.Errorf("the generated function has EXECUTE:\n%s", show)
	}
	sameJSON(t, "change_list", pgtest.MustString(t, s.Conn, "select jsonb_agg(jsonb_build_array(x ->> 'name', x -> 'jobs'))::text from jsonb_array_elements(change_list()) x"),
		`[["opt_out", 1], ["reprice", 2]]`)
}

// register_change validates the plan as register does (the same messages
// for the five keys) and the targets strictly against the change: exactly
// its fields, each a value of its column, no key twice; the tenant must be
// a value of the tenant column. Nothing is written on a refusal. A job of
// the change runs through the fleet's run_next_chunk like any other.
func TestChangeRegisterRefusals(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	s.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	one := `{"payment_id": 1, "lock_version": 3, "amount_cents": 100, "reason": "r"}`
	for _, c := range []struct{ change, plan, msg string }{
		{"nope", changePlan("j", "7", "["+one+"]", 1), "change: there is no change nope (chunks change list)"},
		{"x'; drop", changePlan("j", "7", "["+one+"]", 1), `change: must be 1 to 40 lower-case ASCII letters, digits or _, starting with a letter, got "x'; drop"`},
		{"hold_payment", `{"job_id": "j"}`, `plan: missing key "tenant"`},
		{"hold_payment", changePlan("j k", "7", "["+one+"]", 1), `job_id: ` + nameRule + `, got "j k"`},
		{"hold_payment", changePlan("j", "7", "["+one+"]", 1001), "chunk_size: must be between 1 and 1000, got 1001"},
		{"hold_payment", changePlan("j", "7", "[]", 1), "targets: must be a list of 1 to 10000 targets, got 0"},
		{"hold_payment", changePlan("j", "7", "[1]", 1), "targets[0]: must be an object with the fields payment_id, lock_version, amount_cents, reason, got number"},
		{"hold_payment", changePlan("j", "7", `[{"payment_id": 1, "lock_version": 3, "amount_cents": 100}]`, 1), "targets[0]: missing field reason"},
		{"hold_payment", changePlan("j", "7", `[{"payment_id": 1, "lock_version": 3, "amount_cents": 100, "reason": "r", "status": "x"}]`, 1),
			`targets[0]: unexpected field "status"`},
		{"hold_payment", changePlan("j", "7", "["+one+`, {"payment_id": "2", "lock_version": 3, "amount_cents": 100, "reason": "r"}]`, 1),
			`targets[1].payment_id: must be a number, a value of column payment_id (bigint), got "2"`},
		{"hold_payment", changePlan("j", "7", `[{"payment_id": 1.5, "lock_version": 3, "amount_cents": 100, "reason": "r"}]`, 1),
			`targets[0].payment_id: 1.5 is not a value of column payment_id (bigint): invalid input syntax for type bigint: "1.5"`},
		{"hold_payment", changePlan("j", "7", `[{"payment_id": 1, "lock_version": -1, "amount_cents": 100, "reason": "r"}]`, 1),
			"targets[0].lock_version: must be an integer of at least 0, got -1"},
		{"hold_payment", changePlan("j", "7", `[{"payment_id": 1, "lock_version": 3, "amount_cents": 100, "reason": null}]`, 1),
			"targets[0].reason: must be a string, a value of column hold_reason (text), got null"},
		{"hold_payment", changePlan("j", "7", "["+one+", "+one+"]", 1), "targets: duplicate payment_id 1"},
		{"hold_payment", changePlan("j", "acme", "["+one+"]", 1), `tenant: must be a value of column ` + shop + `.payments.merchant_id (integer) as it prints, got "acme"`},
		{"hold_payment", changePlan("j", "07", "["+one+"]", 1), `tenant: must be a value of column ` + shop + `.payments.merchant_id (integer) as it prints, got "07"`},
	} {
		refuse(t, s, "22023", c.msg, "select register_change($1, $2)::text", c.change, c.plan)
	}
	// Another job under the id of an orders job is a conflict.
	registerJob(t, s, "orders-job", "7", 1, 2, 1)
	refuse(t, s, "CH409", "job orders-job: already registered, not as a job of change hold_payment",
		"select register_change('hold_payment', $1)::text", changePlan("orders-job", "7", "["+one+"]", 1))

	// The fleet's pass runs a change job like any other.
	s.Exec(t, "select register_change('hold_payment', $1)", changePlan("p1", "7", paymentTargets(2, 1), 1))
	s.Exec(t, "delete from job_queue where job_id = 'orders-job'")
	for _, want := range []string{
		`{"job_id": "p1", "processed": [1], "next_index": 1, "done": false, "change_job": true}`,
		`{"job_id": "p1", "processed": [2], "next_index": 2, "done": true, "change_job": true}`,
	} {
		sameJSON(t, "run_next_chunk", pgtest.MustString(t, s.Conn, "select run_next_chunk('w1')::text"), want)
	}
	if got := pgtest.MustString(t, s.Conn, "select run_next_chunk('w1')::text"); got != "<null>" {
		t.Fatalf("run_next_chunk after the job: %s", got)
	}
	// Status and lineage say the job is a declared change's, with its drift (report's).
	sameJSON(t, "job_status", pgtest.MustString(t, s.Conn, "select jsonb_agg(jsonb_build_array(x ->> 'job_id', x ->> 'kind', x ->> 'state', x -> 'drift'))::text from jsonb_array_elements(job_status()) x"),
		`[["orders-job", "cancel", "idle", 0], ["p1", "change", "done", 0]]`)
	sameJSON(t, "job_lineage", pgtest.MustString(t, s.Conn, "select job_lineage('p1')::text"), `{"job_id": "p1", "kind": "change", "change": "hold_payment", "undoes": null, "undone_by": null}`)
	// inspect_job shows the targets as they are stored.
	sameJSON(t, "inspect_job", pgtest.MustString(t, s.Conn, "select (inspect_job('p1') -> 'targets')::text"), paymentTargets(1, 2))
}

// check_change (issue 25, item 4 "Check"): what register_change and a
// drain would do now, read-only, each target judged in its chunk's words.
func TestChangeCheck(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	p := shop + ".payments"
	s.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	s.Exec(t, "update "+p+" set amount_cents = 1 where payment_id = 2")
	s.Exec(t, "update "+p+" set status = 'refunded' where payment_id = 3")
	s.Exec(t, "delete from "+p+" where payment_id = 5")
	before := pgtest.MustString(t, s.Conn, "select jsonb_agg(p order by payment_id)::text from "+p+" p")
	plan := changePlan("p1", "7", paymentTargets(5, 4, 3, 2, 1), 2)
	sameJSON(t, "check_change", pgtest.MustString(t, s.Conn, "select check_change('hold_payment', $1)::text", plan), `{"job_id": "p1", "ok": false, "job": "free", "job_problem": "",
	  "targets": [{"key": 1, "ok": true, "problem": "", "committed": false},
	              {"key": 2, "ok": false, "problem": "payment_id 2: amount_cents is 1, approved 200", "committed": false},
	              {"key": 3, "ok": false, "problem": "payment_id 3: status is refunded, the change requires captured", "committed": false},
	              {"key": 4, "ok": true, "problem": "", "committed": false},
	              {"key": 5, "ok": false, "problem": "payment_id 5: missing", "committed": false}]}`)
	if after := pgtest.MustString(t, s.Conn, "select jsonb_agg(p order by payment_id)::text from "+p+" p"); after != before {
		t.Fatalf("check_change changed the payments")
	}
	if got := pgtest.MustString(t, s.Conn, "select count(*)::text from jobs"); got != "0" {
		t.Fatalf("check_change wrote %s jobs", got)
	}
	// A registered job: its committed targets are ok and committed.
	s.Exec(t, "select register_change('hold_payment', $1)", changePlan("p2", "7", paymentTargets(4, 1), 1))
	s.Exec(t, "select run_chunk('p2')")
	sameJSON(t, "check_change of a registered job", pgtest.MustString(t, s.Conn, "select check_change('hold_payment', $1)::text", changePlan("p2", "7", paymentTargets(4, 1), 1)),
		`{"job_id": "p2", "ok": true, "job": "registered", "job_problem": "",
		  "targets": [{"key": 1, "ok": true, "problem": "", "committed": true}, {"key": 4, "ok": true, "problem": "", "committed": false}]}`)
	sameJSON(t, "check_change of another job under the id", pgtest.MustString(t, s.Conn, "select check_change('hold_payment', $1)::text", changePlan("p2", "7", paymentTargets(4), 1)),
		`{"job_id": "p2", "ok": false, "job": "conflict", "job_problem": "job p2: already registered with different targets",
		  "targets": [{"key": 4, "ok": true, "problem": "", "committed": false}]}`)
	refuse(t, s, "22023", `tenant: must be a value of column `+p+`.merchant_id (integer) as it prints, got "x"`,
		"select check_change('hold_payment', $1)::text", changePlan("p3", "x", paymentTargets(1), 1))
}
