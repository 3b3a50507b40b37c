package tests

import (
	"fmt"
	"slices"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// JobRef.RegisterUndo of a declared change's job: a uuid key comes back in
// Keys (the int lists empty), a bigint key in the contract's int lists (no
// Keys), as Report has them; the undo drains like any job and its report
// is matching once restored.
func TestDriverChangeUndoKeys(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	crm := s.UserSchema(t, contactsSQL)
	shop := s.UserSchema(t, paymentsSQL)
	s.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": "opt_out", "table": "%s.contacts", "key": "id", "expect": ["email"], "set": {"opted_out": true}}`, crm))
	s.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	s.Exec(t, "select register_change('opt_out', $1)", changePlan("c1", "crm", `[
	  {"id": "00000000-0000-0000-0000-00000000000c", "email": "c@example.com"},
	  {"id": "00000000-0000-0000-0000-00000000000a", "email": "a@example.com"},
	  {"id": "00000000-0000-0000-0000-00000000000b", "email": "b@example.com"}]`, 2))
	s.Exec(t, "select register_change('hold_payment', $1)", changePlan("p1", "7", paymentTargets(3, 1, 2), 2))
	a, b, c := "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b", "00000000-0000-0000-0000-00000000000c"

	if _, err := driver.Drain(ctx, s.DSN, "c1", 64); err != nil {
		t.Fatal(err)
	}
	s.Exec(t, "update "+crm+".contacts set email = 'new@example.com', opted_out = false where id = $1", b)
	undo, err := driver.JobRef{ID: "c1"}.RegisterUndo(ctx, s.Conn, "")
	if err != nil || !undo.Created || !slices.Equal(keyStrings(undo.Targets), []string{a, c}) {
		t.Fatalf("RegisterUndo c1: %+v, %v", undo, err)
	}
	// One list of keys each, whatever their type.
	wantJSON(t, "RegisterUndo c1", undo, fmt.Sprintf(`{"job_id": "c1-undo", "undoes": "c1", "created": true, "change": "opt_out",
	  "targets": [%q, %q], "drifted": [%q], "missing": []}`, a, c, b))
	drained, err := driver.Drain(ctx, s.DSN, "c1-undo", 64)
	if err != nil || !drained.Done || !slices.Equal(keyStrings(drained.Keys), []string{a, c}) {
		t.Fatalf("Drain c1-undo: %+v, %v", drained, err)
	}
	if got := pgtest.MustString(t, s.Conn, "select string_agg(right(id::text, 1) || ':' || opted_out, ',' order by id) from "+crm+".contacts"); got != "a:false,b:false,c:false" {
		t.Fatalf("contacts after the undo: %s", got)
	}
	report, err := driver.Report(ctx, s.Conn, "c1-undo")
	if err != nil || report.Keys == nil || !slices.Equal(keyStrings(report.Keys.Matching), []string{a, c}) {
		t.Fatalf("Report c1-undo: %+v, %v", report, err)
	}

	// bigint, the tenant-scoped form: the contract's int lists.
	if _, err := driver.Drain(ctx, s.DSN, "p1", 64); err != nil {
		t.Fatal(err)
	}
	s.Exec(t, "delete from "+shop+".payments where payment_id = 2")
	undo, err = driver.JobRef{ID: "p1", Tenant: "7"}.RegisterUndo(ctx, s.Conn, "p1-back")
	if err != nil {
		t.Fatalf("RegisterUndo p1: %+v, %v", undo, err)
	}
	wantJSON(t, "RegisterUndo p1", undo, `{"job_id": "p1-back", "undoes": "p1", "created": true, "change": "hold_payment", "targets": [1, 3], "drifted": [], "missing": [2]}`)
	if n, ok := undo.Missing[0].Int(); !ok || n != 2 {
		t.Fatalf("p1-back's missing key: %v", undo.Missing)
	}
	if _, err := (driver.JobRef{ID: "p1", Tenant: "8"}).RegisterUndo(ctx, s.Conn, "p1-other"); err == nil {
		t.Fatal("RegisterUndo of another tenant's job: no error")
	}
}
