package tests

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// campaignPayments is a chunks schema with hold_payment defined on a
// payments table of n captured rows (lock_version 3, amount_cents 100 × id).
func campaignPayments(t *testing.T, n int) (*pgtest.Schema, string) {
	t.Helper()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	s.Exec(t, fmt.Sprintf("insert into %s.payments select g, 7, 'captured', 100 * g, null, 3, 'r' || g, g from generate_series(6, %d) g", shop, n))
	if !pgtest.MustBool(t, s.Conn, "select define_change($1)", pgtest.HoldPayment(shop)) {
		t.Fatal("define_change: false for a new change")
	}
	return s, shop
}

// drainFleet runs run_next_chunk until the queue has nothing runnable and
// returns the number of chunks run.
func drainFleet(t *testing.T, s *pgtest.Schema) int {
	t.Helper()
	for n := 0; ; n++ {
		if got := pgtest.MustString(t, s.Conn, "select coalesce(run_next_chunk('w')::text, 'none')"); got == "none" {
			return n
		} else if strings.Contains(got, `"error"`) {
			t.Fatalf("pass %d: %s", n, got)
		}
	}
}

// A campaign of a declared change of 10,000 rows, from a query and from a
// file: its targets checked as register_change checks a job's, sorted by
// key into jobs of the change, drained by the fleet's passes, every row
// changed exactly once (change_audit, the table's trigger); re-creating it
// is a no-op, another approval a conflict naming the difference; check,
// status and report judge by the change's rules, before and after drift
// made by hand; campaign undo restores the rows still as it left them
// (undoChangeCampaign).
func TestCampaignOfAChange(t *testing.T) {
	t.Parallel()
	for _, source := range []string{"query", "file"} {
		t.Run(source, func(t *testing.T) {
			t.Parallel()
			s, shop := campaignPayments(t, 10000)
			var ct driver.CampaignTargets
			var err error
			if source == "query" {
				ct, err = driver.ChangeCampaignTargetsFromQuery(ctx, s.Conn, fmt.Sprintf(
					"select payment_id, lock_version, amount_cents, 'chargeback #' || payment_id as reason from %s.payments order by payment_id desc", shop))
			} else {
				var b strings.Builder
				for id := 10000; id >= 1; id-- {
					fmt.Fprintf(&b, `{"payment_id": %d, "lock_version": 3, "amount_cents": %d, "reason": "chargeback #%d"}`+"\n", id, 100*id, id)
				}
				ct, err = driver.ReadChangeCampaignTargets(strings.NewReader(b.String()))
			}
			if err != nil || len(ct.Objects) != 10000 {
				t.Fatalf("targets: %d, %v", len(ct.Objects), err)
			}
			spec := driver.CampaignSpec{Name: "holds", Tenant: "7", ChunkSize: 10, Change: "hold_payment"}
			created, err := driver.CreateCampaign(ctx, s.Conn, spec, ct)
			if err != nil || !created.Created || created.Jobs != 10 || created.Targets != 10000 {
				t.Fatalf("create: %+v, %v", created, err)
			}
			if again, err := driver.CreateCampaign(ctx, s.Conn, spec, ct); err != nil || again.Created || again.Digest != created.Digest {
				t.Fatalf("the same campaign again: %+v, %v", again, err)
			}
			other := ct
			other.Objects = append(ct.Objects[:0:0], ct.Objects...)
			other.Objects[9999] = []byte(`{"payment_id": 1, "lock_version": 3, "amount_cents": 100, "reason": "other"}`)
			_, err = driver.CreateCampaign(ctx, s.Conn, spec, other)
			wantDriverError(t, err, driver.ErrConflict, `conflict: campaign holds: target 1 (sorted by key) is {"reason": "chargeback #1", "payment_id": 1, "amount_cents": 100, "lock_version": 3}, this approval has {"reason": "other", "payment_id": 1, "amount_cents": 100, "lock_version": 3}`)
			// Its jobs are jobs of the change, in key order, each with its approval.
			sameJSON(t, "jobs", pgtest.MustString(t, s.Conn, `select jsonb_build_array(count(*), count(*) filter (where jc.change = 'hold_payment' and jc.digest = c.digest),
			    count(*) filter (where a.kind = 'change' and a.recorded_from = 'campaign_create'), min((job_targets(j.job_id) -> 0 ->> 'payment_id')::bigint), max(cj.job_id))::text
			  from campaign_jobs cj join jobs j using (job_id) join job_change jc using (job_id) join changes c on c.name = jc.change
			  join job_approval a using (job_id) where cj.campaign = 'holds'`), `[10, 10, 10, 1, "holds-000010"]`)
			sameJSON(t, "first job", pgtest.MustString(t, s.Conn, "select (job_targets('holds-000001') -> 0)::text"),
				`{"payment_id": 1, "lock_version": 3, "amount_cents": 100, "reason": "chargeback #1"}`)

			// The preflight, writing nothing: one row drifted before its chunk.
			s.Exec(t, "update "+shop+".payments set lock_version = 9 where payment_id = 50")
			before := pgtest.MustString(t, s.Conn, "select md5(string_agg(p::text, ',' order by payment_id)) from "+shop+".payments p")
			ch, err := driver.CheckCampaign(ctx, s.Conn, "holds", 10)
			if err != nil || ch.Remaining != 10000 || ch.OK != 9999 || ch.Problems != 1 || len(ch.Listed) != 1 ||
				ch.Listed[0].Key != driver.IntKey(50) || ch.Listed[0].Problem != "payment_id 50: lock_version is 9, approved 3" {
				t.Fatalf("check: %+v, %v", ch, err)
			}
			if after := pgtest.MustString(t, s.Conn, "select md5(string_agg(p::text, ',' order by payment_id)) from "+shop+".payments p"); after != before {
				t.Fatal("campaign check changed the table")
			}
			s.Exec(t, "update "+shop+".payments set lock_version = 3 where payment_id = 50")
			s.Exec(t, "delete from "+shop+".payment_updates")

			if n := drainFleet(t, s); n != 1000 {
				t.Fatalf("the fleet ran %d chunks, want 1000", n)
			}
			sameJSON(t, "audit", pgtest.MustString(t, s.Conn, `select jsonb_build_array(count(*), count(distinct key), min(key::bigint), max(key::bigint),
			    count(*) filter (where version_before = 3 and version_after = 4 and after ->> 'hold_reason' = 'chargeback #' || key))::text
			  from change_audit a join campaign_jobs cj using (job_id) where cj.campaign = 'holds'`), `[10000, 10000, 1, 10000, 10000]`)
			sameJSON(t, "each row once", pgtest.MustString(t, s.Conn, fmt.Sprintf(`select jsonb_build_array(count(*), min(n), max(n))::text
			  from (select payment_id, sum(n) as n from %s.payment_updates group by 1) x`, shop)), `[10000, 1, 1]`)
			sameJSON(t, "rows", pgtest.MustString(t, s.Conn, fmt.Sprintf(`select jsonb_build_array(count(*) filter (where status = 'on_hold' and lock_version = 4), count(*))::text from %s.payments`, shop)),
				`[10000, 10000]`)

			st, err := driver.CampaignStatus(ctx, s.Conn, "holds")
			if err != nil || st.Committed != 10000 || st.JobsDone != 10 || st.Remaining != 0 {
				t.Fatalf("status: %+v, %v", st, err)
			}
			// Drift by hand: a written value, the version, a row gone.
			s.Exec(t, "update "+shop+".payments set hold_reason = 'other' where payment_id = 5")
			s.Exec(t, "update "+shop+".payments set lock_version = 5 where payment_id = 1000")
			s.Exec(t, "delete from "+shop+".payments where payment_id = 77")
			r, err := driver.CampaignReport(ctx, s.Conn, "holds")
			if err != nil || r.Committed != 10000 || r.Matching != 9997 || r.DriftedCount != 2 || r.MissingCount != 1 ||
				fmt.Sprint(r.Drifted) != "[5 1000]" || fmt.Sprint(r.Missing) != "[77]" {
				t.Fatalf("report: %+v, %v", r, err)
			}
			if source == "query" {
				undoChangeCampaign(t, s, shop)
			}
		})
	}
}

// undoChangeCampaign undoes the finished campaign holds of
// TestCampaignOfAChange, whose rows 5 and 1000 drifted and 77 is gone: one
// undo campaign of restore jobs of the change, one per job, drained by the
// fleet's passes; every other row back to its before values (version + 1)
// exactly once by change_audit and the table's trigger, the drifted ones
// untouched; the undo's status and report by the change's rules; the same
// undo again changes nothing, and an undo is not undone.
func undoChangeCampaign(t *testing.T, s *pgtest.Schema, shop string) {
	t.Helper()
	s.Exec(t, "delete from "+shop+".payment_updates")
	untouched := pgtest.MustString(t, s.Conn, "select string_agg(p::text, ' ' order by payment_id) from "+shop+".payments p where payment_id in (5, 1000)")
	u, err := driver.UndoCampaign(ctx, s.Conn, "holds", "")
	if err != nil || !u.Created || u.Name != "holds-undo" || u.Undoes != "holds" || u.Change != "hold_payment" || u.Jobs != 10 ||
		u.Targets != 9997 || fmt.Sprint(u.Drifted) != "[5 1000]" || fmt.Sprint(u.Missing) != "[77]" {
		t.Fatalf("campaign undo: %+v, %v", u, err)
	}
	sameJSON(t, "undo jobs", pgtest.MustString(t, s.Conn, `select jsonb_build_array(count(*),
	    count(*) filter (where k.kind = 'restore' and k.undoes = replace(cj.job_id, '-undo', '') and jc.change = 'hold_payment'),
	    count(*) filter (where a.kind = 'restore' and a.recorded_from = 'register_undo'), count(q.job_id), min(cj.job_id), max(cj.job_id))::text
	  from campaign_jobs cj join job_kind k using (job_id) join job_change jc using (job_id) join job_approval a using (job_id)
	  left join job_queue q using (job_id) where cj.campaign = 'holds-undo'`), `[10, 10, 10, 10, "holds-undo-000001", "holds-undo-000010"]`)
	// Its preflight judges the undo's targets as the change's inverse will,
	// in its words, in one call of the generated check for the campaign.
	s.Exec(t, "update "+shop+".payments set hold_reason = 'late' where payment_id = 3")
	if c, err := driver.CheckCampaign(ctx, s.Conn, "holds-undo", 10); err != nil || c.Remaining != 9997 || c.OK != 9996 || c.Problems != 1 ||
		len(c.Listed) != 1 || c.Listed[0].Key.String() != "3" || c.Listed[0].Problem != "payment_id 3: hold_reason is late, the undone job left chargeback #3" {
		t.Fatalf("check of the undo campaign: %+v, %v", c, err)
	}
	s.Exec(t, "update "+shop+".payments set hold_reason = 'chargeback #3' where payment_id = 3")
	s.Exec(t, "delete from "+shop+".payment_updates") // (the two edits above fired its trigger)
	if n := drainFleet(t, s); n != 1000 {
		t.Fatalf("the fleet ran %d chunks of the undo, want 1000", n)
	}
	sameJSON(t, "undo audit", pgtest.MustString(t, s.Conn, `select jsonb_build_array(count(*), count(distinct key),
	    count(*) filter (where version_before = 4 and version_after = 5 and after = jsonb_build_object('status', 'captured', 'hold_reason', null)
	                       and before = jsonb_build_object('status', 'on_hold', 'hold_reason', 'chargeback #' || key)),
	    count(*) filter (where key in ('5', '77', '1000')))::text
	  from change_audit a join campaign_jobs cj using (job_id) where cj.campaign = 'holds-undo'`), `[9997, 9997, 9997, 0]`)
	sameJSON(t, "each undone row once", pgtest.MustString(t, s.Conn, fmt.Sprintf(`select jsonb_build_array(count(*), min(n), max(n),
	    count(*) filter (where payment_id in (5, 77, 1000)))::text
	  from (select payment_id, sum(n) as n from %s.payment_updates group by 1) x`, shop)), `[9997, 1, 1, 0]`)
	sameJSON(t, "rows", pgtest.MustString(t, s.Conn, fmt.Sprintf(`select jsonb_build_array(count(*),
	    count(*) filter (where status = 'captured' and hold_reason is null and lock_version = 5 and amount_cents = 100 * payment_id))::text
	  from %s.payments`, shop)), `[9999, 9997]`)
	if got := pgtest.MustString(t, s.Conn, "select string_agg(p::text, ' ' order by payment_id) from "+shop+".payments p where payment_id in (5, 1000)"); got != untouched {
		t.Fatalf("the drifted rows: %s, were %s", got, untouched)
	}
	st, err := driver.CampaignStatus(ctx, s.Conn, "holds-undo")
	if err != nil || st.Targets != 9997 || st.Committed != 9997 || st.JobsDone != 10 || st.Remaining != 0 {
		t.Fatalf("undo status: %+v, %v", st, err)
	}
	// The undo's report: matching is the row as restored; drift by hand.
	s.Exec(t, "update "+shop+".payments set hold_reason = 'late' where payment_id = 2")
	r, err := driver.CampaignReport(ctx, s.Conn, "holds-undo")
	if err != nil || r.Targets != 9997 || r.Committed != 9997 || r.Matching != 9996 || r.DriftedCount != 1 || r.MissingCount != 0 ||
		fmt.Sprint(r.Drifted) != "[2]" || fmt.Sprint(r.Missing) != "[]" || r.Undoes == nil || *r.Undoes != "holds" || r.UndoneBy != nil {
		t.Fatalf("undo report: %+v, %v", r, err)
	}
	if r, err := driver.CampaignReport(ctx, s.Conn, "holds"); err != nil || r.UndoneBy == nil || *r.UndoneBy != "holds-undo" || r.Undoes != nil ||
		r.Matching != 0 || r.MissingCount != 1 {
		t.Fatalf("the report of the undone campaign: %+v, %v", r, err)
	}
	again, err := driver.UndoCampaign(ctx, s.Conn, "holds", "")
	if err != nil || again.Created || again.Name != "holds-undo" || again.Change != "hold_payment" || again.Jobs != 10 || again.Targets != 9997 {
		t.Fatalf("campaign undo again: %+v, %v", again, err)
	}
	_, err = driver.UndoCampaign(ctx, s.Conn, "holds", "other-undo")
	wantDriverError(t, err, driver.ErrConflict, "conflict: campaign holds: already undone by holds-undo")
	_, err = driver.UndoCampaign(ctx, s.Conn, "holds-undo", "")
	wantDriverError(t, err, driver.ErrConflict, "conflict: campaign holds-undo: is the undo of holds; an undo is not undone")
}

// wantDriverError fails unless err is of kind and says exactly msg.
func wantDriverError(t testing.TB, err error, kind error, msg string) {
	t.Helper()
	if !errors.Is(err, kind) || err.Error() != msg {
		t.Fatalf("error %v, want %s", err, msg)
	}
}

// A change campaign's bad input is refused before anything is written,
// naming the row, line or index and the field: a query missing a target
// field, an extra column, a column twice, a wrong type; a file's bad entry
// and duplicate key; an unknown change; a tenant that is not a value of the
// tenant column.
func TestCampaignOfAChangeRefusals(t *testing.T) {
	t.Parallel()
	s, shop := campaignPayments(t, 5)
	spec := driver.CampaignSpec{Name: "c", Tenant: "7", ChunkSize: 2, Change: "hold_payment"}
	from := "from " + shop + ".payments order by payment_id"
	for _, c := range []struct{ query, msg string }{
		{"select payment_id, lock_version, amount_cents " + from, "invalid: row 1: missing field reason"},
		{"select payment_id, lock_version, amount_cents, 'x' as reason, status " + from, `invalid: row 1: unexpected field "status"`},
		{"select payment_id, lock_version, amount_cents::text, 'x' as reason " + from,
			`invalid: row 1.amount_cents: must be a number, a value of column amount_cents (integer), got "100"`},
		{"select payment_id, lock_version, amount_cents, case when payment_id = 3 then 1.5 end as lock_version, 'x' as reason " + from,
			`invalid: query: column "lock_version" appears twice`},
		{"select payment_id, lock_version + case when payment_id = 4 then 0.5 else 0 end as lock_version, amount_cents, 'x' as reason " + from,
			"invalid: row 4.lock_version: must be an integer of at least 0, got 3.5"},
		{"select payment_id % 2 as payment_id, lock_version, amount_cents, 'x' as reason " + from,
			"invalid: row 2: duplicate payment_id 0 (first at row 1)"},
	} {
		ct, err := driver.ChangeCampaignTargetsFromQuery(ctx, s.Conn, c.query)
		if err == nil {
			_, err = driver.CreateCampaign(ctx, s.Conn, spec, ct)
		}
		wantDriverError(t, err, driver.ErrInvalid, c.msg)
	}
	for _, c := range []struct{ file, msg string }{
		{"{\"payment_id\": 1, \"lock_version\": 3, \"amount_cents\": 100, \"reason\": \"x\"}\n\n[1]\n", "invalid: line 3: must be an object with the change's fields, got list"},
		{`[{"payment_id": 1, "lock_version": 3, "amount_cents": 100, "reason": "x"}, {"payment_id": "2", "lock_version": 3, "amount_cents": 200, "reason": "x"}]`,
			`invalid: targets[1].payment_id: must be a number, a value of column payment_id (bigint), got "2"`},
		{"{\"payment_id\": 2, \"lock_version\": 3, \"amount_cents\": 200, \"reason\": \"x\"}\n{\"payment_id\": 1, \"lock_version\": 3, \"amount_cents\": 100, \"reason\": \"x\"}\n" +
			"{\"payment_id\": 2, \"lock_version\": 3, \"amount_cents\": 200, \"reason\": \"y\"}\n", "invalid: line 3: duplicate payment_id 2 (first at line 1)"},
	} {
		ct, err := driver.ReadChangeCampaignTargets(strings.NewReader(c.file))
		if err == nil {
			_, err = driver.CreateCampaign(ctx, s.Conn, spec, ct)
		}
		wantDriverError(t, err, driver.ErrInvalid, c.msg)
	}
	ct, err := driver.ChangeCampaignTargetsFromQuery(ctx, s.Conn, "select payment_id, lock_version, amount_cents, 'x' as reason "+from)
	if err != nil {
		t.Fatal(err)
	}
	bad := spec
	bad.Change = "nope"
	_, err = driver.CreateCampaign(ctx, s.Conn, bad, ct)
	wantDriverError(t, err, driver.ErrInvalid, "invalid: change: there is no change nope (chunks change list)")
	bad = spec
	bad.Tenant = "acme"
	_, err = driver.CreateCampaign(ctx, s.Conn, bad, ct)
	wantDriverError(t, err, driver.ErrInvalid, `invalid: tenant: must be a value of column `+shop+`.payments.merchant_id (integer) as it prints, got "acme"`)
	bad = spec
	bad.Change = "Hold"
	_, err = driver.CreateCampaign(ctx, s.Conn, bad, ct)
	wantDriverError(t, err, driver.ErrInvalid, `invalid: change: must be 1 to 40 lower-case ASCII letters, digits or _, starting with a letter, got "Hold"`)
	_, err = driver.CreateCampaign(ctx, s.Conn, driver.CampaignSpec{Name: "c", Tenant: "7", ChunkSize: 2}, ct)
	wantDriverError(t, err, driver.ErrInvalid, "invalid: change: targets that are objects are a campaign of a declared change; name it")
	sameJSON(t, "nothing written", pgtest.MustString(t, s.Conn, "select jsonb_build_array((select count(*) from campaigns), (select count(*) from jobs), (select count(*) from job_change))::text"),
		"[0, 0, 0]")
}
