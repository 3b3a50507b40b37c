package tests

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// keyStrings is keys printed plainly (Key.String).
func keyStrings(keys []driver.Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	return out
}

// wantJSON fails unless v marshals to want (compared as JSON values).
func wantJSON(t testing.TB, what string, v any, want string) {
	t.Helper()
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	sameJSON(t, what, string(got), want)
}

// contactsSQL is crm.contacts of the issue (a uuid key), with three rows.
const contactsSQL = `create table %[1]s.contacts(id uuid primary key, email text, opted_out boolean not null default false);
  insert into %[1]s.contacts values ('00000000-0000-0000-0000-00000000000a', 'a@example.com', false),
                                    ('00000000-0000-0000-0000-00000000000b', 'b@example.com', false),
                                    ('00000000-0000-0000-0000-00000000000c', 'c@example.com', false);`

// The keys of a declared change's job through the Go API: RunChunk, Drain,
// Report and Inspect read a job whose key is uuid or text (Keys, the int
// lists empty) and one whose key is bigint (the contract's int lists, as an
// orders job; no Keys), and Inspect names the change and keeps its targets
// as stored.
func TestDriverChangeKeys(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	crm := s.UserSchema(t, contactsSQL)
	cat := s.UserSchema(t, `create table %[1]s.prices(sku text primary key, price numeric(10, 2) not null);
	  insert into %[1]s.prices values ('sku-1', 10.00), ('sku-2', 20.00), ('sku 3', 30.00);`)
	shop := s.UserSchema(t, paymentsSQL)
	s.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": "opt_out", "table": "%s.contacts", "key": "id", "expect": ["email"], "set": {"opted_out": true}}`, crm))
	s.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": "reprice", "table": "%s.prices", "key": "sku", "expect": ["price"], "set_from_target": {"price": "new_price"}}`, cat))
	s.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	s.Exec(t, "select register_change('opt_out', $1)", changePlan("c1", "crm", `[
	  {"id": "00000000-0000-0000-0000-00000000000c", "email": "c@example.com"},
	  {"id": "00000000-0000-0000-0000-00000000000a", "email": "a@example.com"},
	  {"id": "00000000-0000-0000-0000-00000000000b", "email": "b@example.com"}]`, 2))
	s.Exec(t, "select register_change('reprice', $1)", changePlan("r1", "shop", `[
	  {"sku": "sku-2", "price": 20, "new_price": 21}, {"sku": "sku 3", "price": 30, "new_price": 31}, {"sku": "sku-1", "price": 10, "new_price": 11}]`, 1))
	s.Exec(t, "select register_change('hold_payment', $1)", changePlan("p1", "7", paymentTargets(3, 1, 2), 2))

	// uuid: RunChunk, then Drain for the rest.
	a, b, c := "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b", "00000000-0000-0000-0000-00000000000c"
	res, err := driver.RunChunk(ctx, s.Conn, "c1", nil)
	if err != nil || len(res.Processed) != 0 || !slices.Equal(keyStrings(res.Keys), []string{a, b}) || res.NextIndex != 2 || res.Done {
		t.Fatalf("RunChunk c1: %+v, %v", res, err)
	}
	wantJSON(t, "RunChunk c1", res, fmt.Sprintf(`{"processed": [], "next_index": 2, "done": false, "keys": [%q, %q]}`, a, b))
	drained, err := driver.Drain(ctx, s.DSN, "c1", 64)
	if err != nil || drained.Calls != 1 || !slices.Equal(keyStrings(drained.Keys), []string{c}) || !drained.Done {
		t.Fatalf("Drain c1: %+v, %v", drained, err)
	}
	wantJSON(t, "Drain c1", drained, fmt.Sprintf(`{"calls": 1, "processed": [], "next_index": 3, "done": true, "keys": [%q]}`, c))
	s.Exec(t, "update "+crm+".contacts set opted_out = false where id = $1", b)
	report, err := driver.Report(ctx, s.Conn, "c1")
	if err != nil || report.Keys == nil {
		t.Fatalf("Report c1: %+v, %v", report, err)
	}
	wantJSON(t, "Report c1", report, fmt.Sprintf(`{"approved": [], "committed": [], "remaining": [], "matching": [], "drifted": [], "missing": [],
	  "keys": {"approved": [%[1]q, %[2]q, %[3]q], "committed": [%[1]q, %[2]q, %[3]q], "remaining": [], "matching": [%[1]q, %[3]q], "drifted": [%[2]q], "missing": []}}`, a, b, c))
	job, err := driver.InspectJob(ctx, s.Conn, "c1")
	if err != nil || job == nil || job.Change != "opt_out" || len(job.Targets) != 0 || len(job.ChangeTargets) != 3 {
		t.Fatalf("InspectJob c1: %+v, %v", job, err)
	}
	sameJSON(t, "InspectJob c1 first target", string(job.ChangeTargets[0]), fmt.Sprintf(`{"id": %q, "email": "a@example.com"}`, a))

	// text: a drain in one go, then a key gone.
	drained, err = driver.Drain(ctx, s.DSN, "r1", 64)
	if err != nil || drained.Calls != 3 || !slices.Equal(keyStrings(drained.Keys), []string{"sku 3", "sku-1", "sku-2"}) || len(drained.Processed) != 0 {
		t.Fatalf("Drain r1: %+v, %v", drained, err)
	}
	s.Exec(t, "delete from "+cat+".prices where sku = 'sku-1'")
	report, err = driver.JobRef{ID: "r1", Tenant: "shop"}.Report(ctx, s.Conn)
	if err != nil || report.Keys == nil || !slices.Equal(keyStrings(report.Keys.Missing), []string{"sku-1"}) ||
		!slices.Equal(keyStrings(report.AllKeys().Matching), []string{"sku 3", "sku-2"}) || len(report.Approved) != 0 {
		t.Fatalf("Report r1: %+v, %v", report, err)
	}

	// bigint: the contract's lists, exactly as an orders job has them.
	res, err = driver.RunChunk(ctx, s.Conn, "p1", nil)
	if err != nil || !slices.Equal(res.Processed, []int64{1, 2}) || res.Keys != nil {
		t.Fatalf("RunChunk p1: %+v, %v", res, err)
	}
	wantJSON(t, "RunChunk p1", res, `{"processed": [1, 2], "next_index": 2, "done": false}`)
	if got := keyStrings(res.AllKeys()); !slices.Equal(got, []string{"1", "2"}) {
		t.Fatalf("AllKeys p1: %v", got)
	}
	drained, err = driver.Drain(ctx, s.DSN, "p1", 64)
	if err != nil || !slices.Equal(drained.Processed, []int64{3}) || drained.Keys != nil || !drained.Done {
		t.Fatalf("Drain p1: %+v, %v", drained, err)
	}
	report, err = driver.Report(ctx, s.Conn, "p1")
	if err != nil {
		t.Fatal(err)
	}
	wantJSON(t, "Report p1", report, `{"approved": [1, 2, 3], "committed": [1, 2, 3], "remaining": [], "matching": [1, 2, 3], "drifted": [], "missing": []}`)
	job, err = driver.JobRef{ID: "p1", Tenant: "7"}.Inspect(ctx, s.Conn)
	if err != nil || job == nil || job.Change != "hold_payment" || len(job.ChangeTargets) != 3 || job.NextIndex != 3 {
		t.Fatalf("Inspect p1: %+v, %v", job, err)
	}

	// An orders job's inspect reads as the contract has it: no change.
	if _, err := driver.Register(ctx, s.Conn, goPlan("o1", "7", 1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	job, err = driver.InspectJob(ctx, s.Conn, "o1")
	if err != nil || job == nil {
		t.Fatalf("InspectJob o1: %+v, %v", job, err)
	}
	wantJSON(t, "InspectJob o1", job, `{"job_id": "o1", "tenant": "7", "targets": [{"id": 1, "revision": 3, "qty": 2}, {"id": 2, "revision": 3, "qty": 2}], "chunk_size": 1, "next_index": 0}`)
}

// Key reads a JSON number or string only, and writes it back as it was.
func TestDriverKey(t *testing.T) {
	var keys []driver.Key
	if err := json.Unmarshal([]byte(`[42, "a\"b", "00000000-0000-0000-0000-00000000000a"]`), &keys); err != nil {
		t.Fatal(err)
	}
	if got := keyStrings(keys); !slices.Equal(got, []string{"42", `a"b`, "00000000-0000-0000-0000-00000000000a"}) {
		t.Fatalf("String: %q", got)
	}
	wantJSON(t, "keys", keys, `[42, "a\"b", "00000000-0000-0000-0000-00000000000a"]`)
	// A text key that reads as a number is still text.
	var text driver.Key
	if err := json.Unmarshal([]byte(`"42"`), &text); err != nil {
		t.Fatal(err)
	}
	if _, isInt := text.Int(); isInt || text.String() != "42" || text != driver.TextKey("42") || text == driver.IntKey(42) {
		t.Fatalf(`the key "42": %#v`, text)
	}
	for _, bad := range []string{`[true]`, `[null]`, `[{}]`, `[[1]]`} {
		if err := json.Unmarshal([]byte(bad), &keys); err == nil {
			t.Errorf("Unmarshal %s: no error", bad)
		}
	}
}
