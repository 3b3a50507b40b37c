package tests

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Roles and declared changes (issue 25): only the schema's owner defines or
// drops a change, and only when the writer may SELECT the table and UPDATE
// each column the change writes (issue 35); an operator with no
// privilege on shop.payments registers and drains a job of it through the
// generated SECURITY DEFINER function, which it cannot call itself; a
// viewer cannot run it.
func TestChangeRoles(t *testing.T) {
	t.Parallel()
	r := newRoles(t)
	shop := r.Schema.UserSchema(t, paymentsSQL)
	p := shop + ".payments"
	owner, op, viewer := r.connect(t, r.owner), r.connect(t, r.operator), r.connect(t, r.viewer)

	w := writerOf(t, r.Schema)
	// The writer, not the owner, reads and writes the table; each
	// privilege it lacks is named, with who grants it (issue 35, item 4:
	// SELECT alone used to pass a check of "SELECT, UPDATE").
	r.Schema.Exec(t, "revoke all on all tables in schema "+shop+" from "+w)
	r.Schema.Exec(t, "revoke usage on schema "+shop+" from "+w)
	appOwner := pgtest.MustString(t, r.Schema.Conn, "select current_user::text")
	for _, step := range []struct{ want, grant string }{
		{"table: the owner of schema " + r.Name + " (" + r.owner.Name + ") may not use schema " + shop + " to find " + p + "; its owner (" + appOwner + ") grants it: grant usage on schema " + shop + " to " + r.owner.Name,
			"grant usage on schema " + shop + " to " + r.owner.Name},
		{"table: the writer " + w + " may not use schema " + shop + "; its owner (" + appOwner + ") grants it: grant usage on schema " + shop + " to " + w,
			"grant usage on schema " + shop + " to " + w},
		{"table: the writer " + w + " may not SELECT " + p + "; its owner (" + appOwner + ") grants it: grant select, update on " + p + " to " + w,
			"grant select on " + p + " to " + w},
		{"table: the writer " + w + " may not UPDATE column status of " + p + "; its owner (" + appOwner + ") grants it: grant select, update on " + p + " to " + w,
			"grant update (status, hold_reason) on " + p + " to " + w},
		{"table: the writer " + w + " may not UPDATE column lock_version of " + p + "; its owner (" + appOwner + ") grants it: grant select, update on " + p + " to " + w,
			"grant update (lock_version) on " + p + " to " + w},
	} {
		_, err := pgtest.TryString(owner, "select define_change($1)::text", pgtest.HoldPayment(shop))
		pgtest.WantPgError(t, err, "22023", step.want)
		nothingDefined(t, r.Schema)
		r.Schema.Exec(t, step.grant)
	}
	// The table's trigger runs as the writer: it writes payment_updates.
	r.Schema.Exec(t, "grant insert on "+shop+".payment_updates to "+w)
	// Nothing is granted to the owner itself on the table (it is a member
	// of the writer, so that it can hand the writer the functions it makes).
	if got := pgtest.MustString(t, r.Schema.Conn, "select count(*)::text from pg_class as c, aclexplode(c.relacl) as a where c.oid = $1::regclass and a.grantee = $2::regrole", p, r.owner.Name); got != "0" {
		t.Fatalf("the owner holds %s grants on %s", got, p)
	}
	var err error
	_, err = pgtest.TryString(op, "select define_change($1)::text", pgtest.HoldPayment(shop))
	pgtest.WantPgError(t, err, "42501", "permission denied for function define_change")
	_, err = pgtest.TryString(viewer, "select define_change($1)::text", pgtest.HoldPayment(shop))
	pgtest.WantPgError(t, err, "42501", "permission denied for function define_change")
	// Even with EXECUTE granted by hand, a role that is not the owner is
	// refused: it may not run the helpers either (the first is the owner check).
	r.Schema.Exec(t, "grant execute on function define_change(jsonb), define_change(text) to "+r.operator.Name)
	for _, call := range []string{"select define_change($1::jsonb)::text", "select define_change($1::text)::text"} {
		_, err = pgtest.TryString(op, call, pgtest.HoldPayment(shop))
		pgtest.WantPgError(t, err, "42501", "permission denied for function check_change_owner")
	}
	r.Schema.Exec(t, "revoke execute on function define_change(jsonb), define_change(text) from "+r.operator.Name)
	nothingDefined(t, r.Schema)
	if !pgtest.MustBool(t, owner, "select define_change($1)", pgtest.HoldPayment(shop)) {
		t.Fatal("define_change by the owner: false")
	}
	if got := pgtest.MustString(t, r.Schema.Conn, "select string_agg(p.oid::regprocedure::text || ' ' || p.proowner::regrole::text || ' ' || p.prosecdef, ', ' order by p.proname) from pg_proc p where p.pronamespace = $1::regnamespace and p.proname like '%\\_hold\\_payment'", r.Name); got != "apply_hold_payment(text,text,integer,jsonb) "+w+" true, preview_hold_payment(text,jsonb) "+w+" true, restore_hold_payment(text,text,integer,jsonb) "+w+" true" {
		t.Fatalf("the generated functions' owner, security definer: %s", got)
	}

	// The operator may not touch the table, nor call the generated function.
	if got := pgtest.MustString(t, r.Schema.Conn, "select (has_table_privilege($1, $2, 'SELECT') or has_table_privilege($1, $2, 'UPDATE'))::text", r.operator.Name, p); got != "false" {
		t.Fatalf("the operator has a privilege on %s", p)
	}
	_, err = pgtest.TryString(op, "select apply_hold_payment('x', '7', 0, '[]')::text")
	pgtest.WantPgError(t, err, "42501", "permission denied for function apply_hold_payment")
	_, err = pgtest.TryString(op, "select preview_hold_payment('7', '[]')::text")
	pgtest.WantPgError(t, err, "42501", "permission denied for function preview_hold_payment")
	_, err = pgtest.TryString(op, "select restore_hold_payment('x', '7', 0, '[]')::text")
	pgtest.WantPgError(t, err, "42501", "permission denied for function restore_hold_payment")
	// The operator's preflight runs the generated check through check_change.
	sameJSON(t, "operator's check_change", pgtest.MustString(t, op, "select (check_change('hold_payment', $1) -> 'ok')::text", changePlan("p1", "7", paymentTargets(1, 2, 3), 2)), "true")
	_, err = pgtest.TryString(viewer, "select register_change('hold_payment', $1)::text", changePlan("p1", "7", paymentTargets(1, 2, 3), 2))
	pgtest.WantPgError(t, err, "42501", "permission denied for function register_change")
	if !pgtest.MustBool(t, op, "select register_change('hold_payment', $1)", changePlan("p1", "7", paymentTargets(1, 2, 3), 2)) {
		t.Fatal("register_change by the operator: false")
	}
	_, err = pgtest.TryString(viewer, "select run_chunk('p1')::text")
	pgtest.WantPgError(t, err, "42501", "permission denied for function run_chunk")
	for _, want := range []string{`{"processed": [1, 2], "next_index": 2, "done": false}`, `{"processed": [3], "next_index": 3, "done": true}`} {
		sameJSON(t, "operator's chunk", pgtest.MustString(t, op, "select run_chunk('p1')::text"), want)
	}
	if got := pgtest.MustString(t, r.Schema.Conn, "select string_agg(payment_id || ':' || status, ',' order by payment_id) from "+p); got != "1:on_hold,2:on_hold,3:on_hold,4:captured,5:captured" {
		t.Fatalf("payments: %s", got)
	}
	// The viewer reads the change and its audit.
	sameJSON(t, "viewer's change_show", pgtest.MustString(t, viewer, "select (change_show('hold_payment') -> 'jobs')::text"), "1")
	if got := pgtest.MustString(t, viewer, "select count(*)::text from change_audit"); got != "3" {
		t.Fatalf("viewer reads %s audit rows", got)
	}
	// The operator undoes the job and drains the undo through the
	// change's inverse, still with no privilege on the table; the viewer may not.
	_, err = pgtest.TryString(viewer, "select register_undo('p1')::text")
	pgtest.WantPgError(t, err, "42501", "permission denied for function register_undo")
	sameJSON(t, "operator's undo", pgtest.MustString(t, op, "select register_undo('p1')::text"),
		`{"job_id": "p1-undo", "undoes": "p1", "created": true, "change": "hold_payment", "targets": [1, 2, 3], "drifted": [], "missing": []}`)
	for _, want := range []string{`{"processed": [1, 2], "next_index": 2, "done": false}`, `{"processed": [3], "next_index": 3, "done": true}`} {
		sameJSON(t, "operator's undo chunk", pgtest.MustString(t, op, "select run_chunk('p1-undo')::text"), want)
	}
	if got := pgtest.MustString(t, r.Schema.Conn, "select string_agg(payment_id || ':' || status || ':' || lock_version, ',' order by payment_id) from "+p); got != "1:captured:5,2:captured:5,3:captured:5,4:captured:3,5:captured:3" {
		t.Fatalf("payments after the undo: %s", got)
	}

	// Only the owner drops, and only when no job of the change exists.
	_, err = pgtest.TryString(op, "select drop_change('hold_payment')::text")
	pgtest.WantPgError(t, err, "42501", "permission denied for function drop_change")
	_, err = pgtest.TryString(owner, "select drop_change('hold_payment')::text")
	pgtest.WantPgError(t, err, "CH409", "change hold_payment: 2 jobs of it exist; a change is dropped only when none does")
	r.Schema.Exec(t, "delete from change_audit")
	r.Schema.Exec(t, "delete from job_kind")
	r.Schema.Exec(t, "delete from job_queue")
	r.Schema.Exec(t, "delete from jobs")
	if !pgtest.MustBool(t, owner, "select drop_change('hold_payment')") {
		t.Fatal("drop_change: false")
	}
	if pgtest.MustBool(t, owner, "select drop_change('hold_payment')") {
		t.Fatal("drop_change again: true")
	}
	nothingDefined(t, r.Schema)
}
