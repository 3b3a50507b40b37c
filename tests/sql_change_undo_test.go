package tests

import (
	"fmt"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// The undo of a job of a declared change (register_undo) on shop.payments
// (bigint key, tenant, version, set_from_target), by the orders' rules:
// an unfinished job that is not paused is refused, nothing to undo before
// a chunk commits; the undo restores the before values of the committed
// rows still as the job left them, with version + 1, audited in
// change_audit, as a job of the same change run by run_chunk; drifted and
// missing rows are listed and left alone; the same undo again changes
// nothing, a job is undone once and an undo is not undone.
func TestChangeUndoPayments(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	s.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	s.Exec(t, "select register_change('hold_payment', $1)", changePlan("p1", "7", paymentTargets(1, 2, 3, 4), 2))

	_, err := pgtest.TryString(s.Conn, "select register_undo('p1')::text")
	pgtest.WantPgError(t, err, "CH409", "job p1: can still make progress (next_index 0 of 4, not paused): pause it first (chunks pause p1)")
	s.Exec(t, "select pause_job('p1')")
	_, err = pgtest.TryString(s.Conn, "select register_undo('p1')::text")
	pgtest.WantPgError(t, err, "CH409", "job p1: nothing to undo: no chunk of it is committed")
	s.Exec(t, "select resume_job('p1')")
	for range 2 {
		s.Exec(t, "select run_chunk('p1')")
	}

	// Drift by hand: a written value changed (1), a row gone (4).
	s.Exec(t, "update "+shop+".payments set hold_reason = 'other' where payment_id = 1")
	s.Exec(t, "delete from "+shop+".payments where payment_id = 4")
	sameJSON(t, "register_undo", pgtest.MustString(t, s.Conn, "select register_undo('p1')::text"),
		`{"job_id": "p1-undo", "undoes": "p1", "created": true, "change": "hold_payment", "targets": [2, 3], "drifted": [1], "missing": [4]}`)
	sameJSON(t, "register_undo again", pgtest.MustString(t, s.Conn, "select register_undo('7', 'p1', null)::text"),
		`{"job_id": "p1-undo", "undoes": "p1", "created": false, "change": "hold_payment", "targets": [2, 3], "drifted": [1], "missing": [4]}`)
	sameJSON(t, "the undo's targets", pgtest.MustString(t, s.Conn, "select job_targets('p1-undo')::text"),
		`[{"payment_id": 2, "amount_cents": 200, "lock_version": 4, "?after": {"status": "on_hold", "hold_reason": "chargeback's #2"}, "?before": {"status": "captured", "hold_reason": null}},
		  {"payment_id": 3, "amount_cents": 300, "lock_version": 4, "?after": {"status": "on_hold", "hold_reason": "chargeback's #3"}, "?before": {"status": "captured", "hold_reason": null}}]`)
	sameJSON(t, "the undo's records", pgtest.MustString(t, s.Conn, `select jsonb_build_array(j.tenant, j.chunk_size, k.kind, k.undoes, jc.change, jc.digest = c.digest,
	    ap.kind, ap.recorded_from, ap.targets_sha256 = targets_sha256(job_targets(j.job_id)), q.job_id is not null)::text
	  from job_shapes j join job_kind k using (job_id) join job_change jc using (job_id) join changes c on c.name = jc.change
	  join job_approval ap using (job_id) left join job_queue q using (job_id) where j.job_id = 'p1-undo'`),
		`["7", 2, "restore", "p1", "hold_payment", true, "restore", "register_undo", true, true]`)
	sameJSON(t, "the undo's report before it runs", pgtest.MustString(t, s.Conn, "select report('p1-undo')::text"),
		`{"approved": [2, 3], "committed": [], "remaining": [2, 3], "matching": [], "drifted": [], "missing": []}`)

	// The rules of undo.
	_, err = pgtest.TryString(s.Conn, "select register_undo('p1', 'p1-again')::text")
	pgtest.WantPgError(t, err, "CH409", "job p1: already undone by p1-undo")
	_, err = pgtest.TryString(s.Conn, "select register_undo('p1-undo')::text")
	pgtest.WantPgError(t, err, "CH409", "job p1-undo: is the undo of p1; an undo is not undone (register a new job of change hold_payment to change those rows again)")

	// A row moved on after the undo was registered: its chunk is refused, naming the key.
	s.Exec(t, "update "+shop+".payments set lock_version = 5 where payment_id = 2")
	_, err = pgtest.TryString(s.Conn, "select run_chunk('p1-undo')::text")
	pgtest.WantPgError(t, err, "CH409", "payment_id 2: lock_version is 5, the undone job left 4")
	s.Exec(t, "update "+shop+".payments set lock_version = 4 where payment_id = 2")
	sameJSON(t, "the undo's chunk", pgtest.MustString(t, s.Conn, "select run_chunk('p1-undo')::text"), `{"processed": [2, 3], "next_index": 2, "done": true}`)
	sameJSON(t, "payments", pgtest.MustString(t, s.Conn, fmt.Sprintf(`select jsonb_agg(jsonb_build_array(payment_id, status, hold_reason, lock_version) order by payment_id)::text from %s.payments`, shop)),
		`[[1, "on_hold", "other", 4], [2, "captured", null, 5], [3, "captured", null, 5], [5, "captured", null, 3]]`)
	sameJSON(t, "triggers", pgtest.MustString(t, s.Conn, fmt.Sprintf(`select jsonb_object_agg(payment_id, n)::text from (select payment_id, sum(n) as n from %s.payment_updates group by 1) x`, shop)),
		`{"1": 2, "2": 4, "3": 2, "4": 1}`) // by the job, by hand (1: once, 2: twice) and by the undo
	sameJSON(t, "the undo's audit", pgtest.MustString(t, s.Conn, `select jsonb_agg(jsonb_build_array(ordinal, key, version_before, version_after, before, after) order by ordinal)::text from change_audit where job_id = 'p1-undo'`),
		`[[0, "2", 4, 5, {"status": "on_hold", "hold_reason": "chargeback's #2"}, {"status": "captured", "hold_reason": null}],
		  [1, "3", 4, 5, {"status": "on_hold", "hold_reason": "chargeback's #3"}, {"status": "captured", "hold_reason": null}]]`)

	// The undo's report: matching while a row has its before values back.
	s.Exec(t, "update "+shop+".payments set status = 'refunded' where payment_id = 3")
	sameJSON(t, "the undo's report", pgtest.MustString(t, s.Conn, "select report('7', 'p1-undo')::text"),
		`{"approved": [2, 3], "committed": [2, 3], "remaining": [], "matching": [2], "drifted": [3], "missing": []}`)
	sameJSON(t, "the job's report", pgtest.MustString(t, s.Conn, "select report('p1')::text"),
		`{"approved": [1, 2, 3, 4], "committed": [1, 2, 3, 4], "remaining": [], "matching": [], "drifted": [1, 2, 3], "missing": [4]}`)
	sameJSON(t, "job_lineage", pgtest.MustString(t, s.Conn, "select jsonb_build_array(job_lineage('p1'), job_lineage('p1-undo'))::text"),
		`[{"job_id": "p1", "kind": "change", "change": "hold_payment", "undoes": null, "undone_by": "p1-undo"},
		  {"job_id": "p1-undo", "kind": "restore", "change": "hold_payment", "undoes": "p1", "undone_by": null}]`)

	// Nothing left to undo: every committed row drifted or missing.
	s.Exec(t, "select register_change('hold_payment', $1)", changePlan("p2", "7", paymentTargets(5), 1))
	s.Exec(t, "select run_chunk('p2')")
	s.Exec(t, "update "+shop+".payments set lock_version = 9 where payment_id = 5")
	_, err = pgtest.TryString(s.Conn, "select register_undo('p2')::text")
	pgtest.WantPgError(t, err, "CH409", "job p2: nothing to undo: none of its 1 committed rows is as it left it (drifted [5], missing [])")

	// A version at the largest its column holds cannot move again.
	s.Exec(t, "update "+shop+".payments set status = 'captured', lock_version = 2147483646 where payment_id = 5")
	s.Exec(t, "select register_change('hold_payment', $1)", changePlan("p3", "7", `[{"payment_id": 5, "lock_version": 2147483646, "amount_cents": 500, "reason": "last"}]`, 1))
	s.Exec(t, "select run_chunk('p3')")
	_, err = pgtest.TryString(s.Conn, "select register_undo('p3')::text")
	pgtest.WantPgError(t, err, "CH409", "job p3: payment_id 5: lock_version is 2147483647, the largest its column (integer) holds: it cannot be restored")
	if got := pgtest.MustString(t, s.Conn, "select count(*)::text from jobs where job_id = 'p3-undo'"); got != "0" {
		t.Fatalf("p3-undo: %s jobs", got)
	}
}

// The undo of a change on a table with no version (crm.contacts: uuid key,
// expect only): a row must still have every value the job wrote, or its
// chunk is refused naming the key and the column; the keys are strings.
// An undo whose targets were changed by hand is refused like any job.
func TestChangeUndoContacts(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	crm := s.UserSchema(t, `create table %[1]s.contacts(id uuid primary key, email text, opted_out boolean not null default false, note text);
	  insert into %[1]s.contacts values ('00000000-0000-0000-0000-00000000000a', 'a@example.com', false, null),
	                                    ('00000000-0000-0000-0000-00000000000b', null, false, 'kept'),
	                                    ('00000000-0000-0000-0000-00000000000c', 'c@example.com', false, null);`)
	s.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": "opt_out", "table": "%s.contacts", "key": "id", "expect": ["email"],
	  "set": {"opted_out": true, "note": "it's done"}}`, crm))
	s.Exec(t, "select register_change('opt_out', $1)", changePlan("c1", "crm", `[
	  {"id": "00000000-0000-0000-0000-00000000000c", "email": "c@example.com"},
	  {"id": "00000000-0000-0000-0000-00000000000b", "email": null},
	  {"id": "00000000-0000-0000-0000-00000000000a", "email": "a@example.com"}]`, 10))
	s.Exec(t, "select run_chunk('c1')")
	s.Exec(t, "update "+crm+".contacts set note = 'by hand' where right(id::text, 1) = 'c'")

	sameJSON(t, "register_undo", pgtest.MustString(t, s.Conn, "select register_undo('c1', 'c1-back')::text"),
		`{"job_id": "c1-back", "undoes": "c1", "created": true, "change": "opt_out", "targets": ["00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"],
		  "drifted": ["00000000-0000-0000-0000-00000000000c"], "missing": []}`)
	// Drift after the undo was registered: its chunk is refused, nothing written.
	s.Exec(t, "update "+crm+".contacts set opted_out = false where right(id::text, 1) = 'a'")
	_, err := pgtest.TryString(s.Conn, "select run_chunk('c1-back')::text")
	pgtest.WantPgError(t, err, "CH409", "id 00000000-0000-0000-0000-00000000000a: opted_out is false, the undone job left true")
	s.Exec(t, "update "+crm+".contacts set opted_out = true where right(id::text, 1) = 'a'")

	// Tampering: the undo's targets are written once; changed past the
	// trigger, verify and report refuse them.
	rewrite := `update change_targets set target = jsonb_set(target, '{?before,note}', $1) where job_id = 'c1-back' and ordinal = 0 returning 'rewritten'`
	_, err = pgtest.TryString(s.Conn, rewrite, `"x"`)
	pgtest.WantPgError(t, err, "CH409", "change_targets: an approved job's targets are written once, by register; register a new job instead")
	s.Exec(t, "alter table change_targets disable trigger written_once")
	pgtest.MustString(t, s.Conn, rewrite, `"x"`)
	_, err = pgtest.TryString(s.Conn, "select report('c1-back')::text")
	pgtest.WantPgErrorContaining(t, err, "CH409", "job c1-back: the stored job is no longer the registered approval: its targets were changed after register")
	pgtest.MustString(t, s.Conn, rewrite, `null`)
	s.Exec(t, "alter table change_targets enable trigger written_once")

	sameJSON(t, "the undo's chunk", pgtest.MustString(t, s.Conn, "select run_chunk('c1-back')::text"),
		`{"processed": ["00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"], "next_index": 2, "done": true}`)
	sameJSON(t, "contacts", pgtest.MustString(t, s.Conn, "select jsonb_agg(jsonb_build_array(right(id::text, 1), email, opted_out, note) order by id)::text from "+crm+".contacts"),
		`[["a", "a@example.com", false, null], ["b", null, false, "kept"], ["c", "c@example.com", true, "by hand"]]`)
	sameJSON(t, "the undo's audit", pgtest.MustString(t, s.Conn, "select jsonb_agg(jsonb_build_array(key, version_before, version_after, before, after) order by ordinal)::text from change_audit where job_id = 'c1-back'"),
		`[["00000000-0000-0000-0000-00000000000a", null, null, {"note": "it's done", "opted_out": true}, {"note": null, "opted_out": false}],
		  ["00000000-0000-0000-0000-00000000000b", null, null, {"note": "it's done", "opted_out": true}, {"note": "kept", "opted_out": false}]]`)
	sameJSON(t, "the undo's report", pgtest.MustString(t, s.Conn, "select report('c1-back')::text"),
		`{"approved": ["00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"],
		  "committed": ["00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"], "remaining": [],
		  "matching": ["00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"], "drifted": [], "missing": []}`)
	_, err = pgtest.TryString(s.Conn, "select register_undo('c1-back')::text")
	pgtest.WantPgError(t, err, "CH409", "job c1-back: is the undo of c1; an undo is not undone (register a new job of change opt_out to change those rows again)")
}

// TestChangeRegeneratedByMigrate: every migrate makes a defined change's
// functions again with this build's generator, so a change defined by an
// older build (here: its inverse dropped by hand, as before undo existed)
// gets what this build generates, with its definition and approvals as
// they were.
func TestChangeRegeneratedByMigrate(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	s.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	const source = `select string_agg(pg_get_functiondef(p.oid), E'\n' order by p.oid::regprocedure::text)
	  from pg_proc as p where p.pronamespace = current_schema()::regnamespace and p.proname like '%\_hold\_payment'`
	before := pgtest.MustString(t, s.Conn, source)
	digest := pgtest.MustString(t, s.Conn, "select digest from changes where name = 'hold_payment'")
	s.Exec(t, "drop function restore_hold_payment(text, text, integer, jsonb)")
	s.Exec(t, "select register_change('hold_payment', $1)", changePlan("p1", "7", paymentTargets(1, 2), 2))
	s.Exec(t, "select run_chunk('p1')")

	admin := pgtest.Connect(t, pgtest.DSN())
	if err := driver.Migrate(ctx, admin, s.Name, driver.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if after := pgtest.MustString(t, s.Conn, source); after != before {
		t.Errorf("the generated functions after migrate differ from define_change's:\n%s\nwant\n%s", after, before)
	}
	if got := pgtest.MustString(t, s.Conn, "select digest from changes where name = 'hold_payment'"); got != digest {
		t.Errorf("digest %s after migrate, want %s", got, digest)
	}
	if n := pgtest.MustString(t, s.Conn, `select count(*)::text from pg_proc as p
	    where p.pronamespace = current_schema()::regnamespace and p.proname in ('apply_hold_payment', 'restore_hold_payment', 'preview_hold_payment')
	      and p.proowner = (select role from change_writer)::regrole
	      and not has_function_privilege('public', p.oid, 'EXECUTE')`); n != "3" {
		t.Errorf("want 3 generated functions owned by the writer, none PUBLIC's; got %s", n)
	}
	// The undo runs on the inverse migrate made again.
	sameJSON(t, "register_undo", pgtest.MustString(t, s.Conn, "select register_undo('p1')::text"),
		`{"job_id": "p1-undo", "undoes": "p1", "created": true, "change": "hold_payment", "targets": [1, 2], "drifted": [], "missing": []}`)
	s.Exec(t, "select run_chunk('p1-undo')")
	if got := pgtest.MustString(t, s.Conn, "select string_agg(status || ' ' || lock_version, ', ' order by payment_id) from "+shop+".payments where payment_id in (1, 2)"); got != "captured 5, captured 5" {
		t.Errorf("after the undo: %s", got)
	}
}
