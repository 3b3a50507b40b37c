package tests

import (
	"errors"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// The Go face of declared changes: ParseChange reads a definition strictly,
// DefineChange, Changes, ShowChange, RegisterChange and DropChange call the
// SQL functions, and a change job runs through JobRef.RunChunk.
func TestDriverChange(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)

	_, err := driver.ParseChange(strings.NewReader(`{"name": "x", "table": "a.b", "key": "id", "sets": {}}`))
	if !errors.Is(err, driver.ErrInvalid) || err.Error() != `invalid: definition: unknown field "sets"` {
		t.Fatalf("ParseChange with an unknown field: %v", err)
	}
	_, err = driver.ParseChange(strings.NewReader(`{"name": "x"} {}`))
	if !errors.Is(err, driver.ErrInvalid) || err.Error() != "invalid: definition: must be a single JSON value, found more after it" {
		t.Fatalf("ParseChange with two values: %v", err)
	}
	def, err := driver.ParseChange(strings.NewReader(pgtest.HoldPayment(shop)))
	if err != nil {
		t.Fatal(err)
	}
	if def.Name != "hold_payment" || def.Version != "lock_version" || def.SetFromTarget["hold_reason"] != "reason" || len(def.Expect) != 1 {
		t.Fatalf("ParseChange: %+v", def)
	}
	for i, want := range []bool{true, false} {
		if created, err := driver.DefineChange(ctx, s.Conn, def); err != nil || created != want {
			t.Fatalf("DefineChange %d: %v, %v; want %v", i, created, err, want)
		}
	}
	// The same definition from SQL with an empty list is the same definition.
	if pgtest.MustBool(t, s.Conn, "select define_change($1::jsonb || '{\"when\": {\"status\": \"captured\"}, \"set_from_target\": {\"hold_reason\": \"reason\"}}')", pgtest.HoldPayment(shop)) {
		t.Fatal("define_change of the same definition: true")
	}
	other := def
	other.Set = map[string]any{"status": "held"}
	if _, err := driver.DefineChange(ctx, s.Conn, other); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("DefineChange of another definition: %v", err)
	}
	bad := def
	bad.Name = "Hold; drop"
	if _, err := driver.DefineChange(ctx, s.Conn, bad); !errors.Is(err, driver.ErrInvalid) ||
		err.Error() != `invalid: name: must be 1 to 40 lower-case ASCII letters, digits or _, starting with a letter, got "Hold; drop"` {
		t.Fatalf("DefineChange of a bad name: %v", err)
	}
	bad = def
	bad.Name, bad.Key = "other", driver.KeyColumn("hold_reason")
	if _, err := driver.DefineChange(ctx, s.Conn, bad); !errors.Is(err, driver.ErrInvalid) || err.Error() != "invalid: key: column "+shop+".payments.hold_reason may be NULL" {
		t.Fatalf("DefineChange of a nullable key: %v", err)
	}

	list, err := driver.Changes(ctx, s.Conn)
	if err != nil || len(list) != 1 || list[0].Name != "hold_payment" || list[0].Table != shop+".payments" || list[0].Jobs != 0 || len(list[0].Digest) != 64 {
		t.Fatalf("Changes: %+v, %v", list, err)
	}
	info, err := driver.ShowChange(ctx, s.Conn, "hold_payment")
	if err != nil || info.Definition.Key.Column() != "payment_id" || info.Function != "apply_hold_payment" || info.Source == nil ||
		!strings.Contains(*info.Source, "FUNCTION "+s.Name+".apply_hold_payment(") {
		t.Fatalf("ShowChange: %+v, %v", info, err)
	}
	if info, err := driver.ShowChange(ctx, s.Conn, "nope"); info != nil || err != nil {
		t.Fatalf("ShowChange of no change: %+v, %v", info, err)
	}

	plan := driver.ChangePlan{JobID: "p1", Tenant: "7", ChunkSize: 2, AllowPartial: true, Targets: []map[string]any{
		{"payment_id": 2, "lock_version": 3, "amount_cents": 200, "reason": "fraud"},
		{"payment_id": 1, "lock_version": 3, "amount_cents": 100, "reason": "fraud"},
	}}
	for _, c := range []struct {
		edit func(*driver.ChangePlan)
		msg  string
	}{
		{func(p *driver.ChangePlan) { p.JobID = "" }, "job_id: must be 1 to 64 ASCII letters, digits, _ or -, got 0 characters"},
		{func(p *driver.ChangePlan) { p.Tenant = "a b" }, `tenant: must be 1 to 64 ASCII letters, digits, _ or -, got "a b"`},
		{func(p *driver.ChangePlan) { p.Targets = nil }, "targets: must be a list of 1 to 10000 targets, got 0"},
		{func(p *driver.ChangePlan) { p.ChunkSize = 0 }, "chunk_size: must be between 1 and 1000, got 0"},
		{func(p *driver.ChangePlan) { p.AllowPartial = false }, "allow_partial: must be true (each chunk commits on its own), got false"},
		{func(p *driver.ChangePlan) {
			p.Targets = p.Targets[:1:1]
			p.Targets[0] = map[string]any{"payment_id": 1}
		}, "targets[0]: missing field lock_version"},
	} {
		p := plan
		p.Targets = append([]map[string]any(nil), plan.Targets...)
		c.edit(&p)
		if _, err := driver.RegisterChange(ctx, s.Conn, "hold_payment", p); !errors.Is(err, driver.ErrInvalid) || err.Error() != "invalid: "+c.msg {
			t.Fatalf("RegisterChange: %v, want %q", err, c.msg)
		}
	}
	chk, err := driver.CheckChange(ctx, s.Conn, "hold_payment", plan)
	if err != nil || !chk.OK || chk.Job != driver.JobFree || len(chk.Targets) != 2 || chk.Targets[1].Key != driver.IntKey(2) || chk.Targets[1].Problem != "" {
		t.Fatalf("CheckChange: %+v, %v", chk, err)
	}
	if _, err := driver.CheckChange(ctx, s.Conn, "hold_payment", driver.ChangePlan{JobID: "p1", Tenant: "7", ChunkSize: 2}); !errors.Is(err, driver.ErrInvalid) {
		t.Fatalf("CheckChange without targets: %v", err)
	}
	for i, want := range []bool{true, false} {
		if created, err := driver.RegisterChange(ctx, s.Conn, "hold_payment", plan); err != nil || created != want {
			t.Fatalf("RegisterChange %d: %v, %v; want %v", i, created, err, want)
		}
	}
	res, err := driver.JobRef{ID: "p1", Tenant: "7"}.RunChunk(ctx, s.Conn, nil)
	if err != nil || !res.Done || res.NextIndex != 2 || len(res.Processed) != 2 || res.Processed[0] != 1 || res.Processed[1] != 2 {
		t.Fatalf("RunChunk: %+v, %v", res, err)
	}
	if _, err := driver.DropChange(ctx, s.Conn, "hold_payment"); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("DropChange with a job: %v", err)
	}
	if dropped, err := driver.DropChange(ctx, s.Conn, "nope"); dropped || err != nil {
		t.Fatalf("DropChange of no change: %v, %v", dropped, err)
	}
}

// The crash drills of a declared change's job: a failure at each of the
// four hook points of a chunk leaves every row changed at most once, and
// the job, run again, changes each exactly once by the audit.
func TestDriverChangeCrashPoints(t *testing.T) {
	t.Parallel()
	for _, point := range driver.Points {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			s := pgtest.NewSchema(t)
			shop := s.UserSchema(t, paymentsSQL)
			s.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
			s.Exec(t, "select register_change('hold_payment', $1)", changePlan("p1", "7", paymentTargets(1, 2, 3), 2))
			crash := errors.New("crash at " + point)
			_, err := driver.JobRef{ID: "p1"}.RunChunk(ctx, s.Conn, func(p string) error {
				if p == point {
					return crash
				}
				return nil
			})
			if !errors.Is(err, crash) {
				t.Fatalf("RunChunk with a crash at %s: %v", point, err)
			}
			committed := "0"
			if point == driver.AfterCommit {
				committed = "2"
			}
			if got := pgtest.MustString(t, s.Conn, "select (select count(*) from change_audit) || '/' || (select count(*) from "+shop+".payments where status = 'on_hold')"); got != committed+"/"+committed {
				t.Fatalf("after a crash at %s: audit rows/changed rows %s, want %s/%s", point, got, committed, committed)
			}
			for {
				res, err := driver.JobRef{ID: "p1"}.RunChunk(ctx, s.Conn, nil)
				if err != nil {
					t.Fatal(err)
				}
				if res.Done {
					break
				}
			}
			if got := pgtest.MustString(t, s.Conn, "select (select count(*) || '/' || count(distinct key) from change_audit) || ' ' || (select count(*) from "+shop+".payments where status = 'on_hold' and lock_version = 4) || ' ' || (select sum(n) from "+shop+".payment_updates)"); got != "3/3 3 3" {
				t.Fatalf("after the drain: %s, want 3/3 3 3 (audit rows/keys, changed rows, trigger calls)", got)
			}
		})
	}
}
