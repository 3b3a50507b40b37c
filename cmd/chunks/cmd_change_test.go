package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// userTables creates a schema of the user's own (not chunks') for one
// test: payments with a bigint key and contacts with a uuid key. It is
// dropped when the test ends.
func userTables(t testing.TB, l *clitest.Lab) string {
	t.Helper()
	return l.UserSchema(t, `create table %[1]s.payments(payment_id bigint primary key, merchant_id integer not null,
	    status text not null, amount_cents integer not null, hold_reason text, lock_version integer not null);
	  insert into %[1]s.payments select g, 7, 'captured', 100 * g, null, 3 from generate_series(1, 4) g;
	  create table %[1]s.contacts(id uuid primary key, email text, opted_out boolean not null default false);
	  insert into %[1]s.contacts values ('00000000-0000-0000-0000-00000000000a', 'a@example.com', false),
	                                    ('00000000-0000-0000-0000-00000000000b', 'b@example.com', false);`)
}

// holdPlan is job jobID of hold_payment over payments ids (lock_version 3).
func holdPlan(jobID string, size int, ids ...int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf(`{"payment_id": %d, "lock_version": 3, "amount_cents": %d, "reason": "chargeback"}`, id, 100*id)
	}
	return fmt.Sprintf(`{"job_id": %q, "tenant": "7", "targets": [%s], "chunk_size": %d, "allow_partial": true}`, jobID, strings.Join(parts, ", "), size)
}

func TestChangeOptions(t *testing.T) {
	def := parsed(t, parseChangeDefine, "change", "define", writeFile(t, "d.json", pgtest.HoldPayment("shop")))
	if def.Definition.Name != "hold_payment" || def.Definition.Table != "shop.payments" || def.Definition.SetFromTarget["hold_reason"] != "reason" {
		t.Fatalf("change define: %+v", def)
	}
	if got := parsed(t, parseChangeName, "change", "show", "hold_payment"); got.Name != "hold_payment" {
		t.Fatalf("change show: %+v", got)
	}
	wantInvalid(t, &changeDefineOptions{Definition: driver.ChangeDefinition{Name: "Hold"}}, "name: must be 1 to 40 lower-case ASCII letters", `"Hold"`)
	wantInvalid(t, &changeNameOptions{Name: "x; drop"}, "name: must be 1 to 40", `"x; drop"`)
	reg := parsed(t, parsePlan, "register", "--change", "hold_payment", writeFile(t, "p.json", holdPlan("p1", 2, 2, 1)))
	if reg.Change != "hold_payment" || reg.ChangePlan.JobID != "p1" || len(reg.ChangePlan.Targets) != 2 || fmt.Sprint(reg.ChangePlan.Targets[0]["payment_id"]) != "2" {
		t.Fatalf("register --change: %+v", reg)
	}
	wantInvalid(t, &planOptions{Change: "Bad", ChangePlan: reg.ChangePlan}, "change: must be 1 to 40", `"Bad"`)
	bad := reg.ChangePlan
	bad.ChunkSize = 1001
	wantInvalid(t, &planOptions{Change: "hold_payment", ChangePlan: bad}, "chunk_size")

	// change list and show only read: a viewer may run them; define and drop not.
	for _, c := range []struct {
		args []string
		want driver.Access
	}{{[]string{"change", "list"}, driver.Viewer}, {[]string{"change", "show", "x"}, driver.Viewer},
		{[]string{"change", "define", "-"}, driver.Operator}, {[]string{"change", "drop", "x"}, driver.Operator}} {
		var got driver.Access
		parsed(t, func(c *cli.Context) (*noArgs, error) { got = commandAccess(c); return &noArgs{}, nil }, c.args...)
		if got != c.want {
			t.Errorf("chunks %q: access %v, want %v", c.args, got, c.want)
		}
	}

	// Refused before anything connects (no lab: no server at all).
	for _, c := range []struct {
		stdin string
		args  []string
		parts []string
	}{
		{`{"name": "x", "table": "a.b", "key": "id", "sets": {}}`, []string{"change", "define", "-"}, []string{`definition: unknown field "sets"`}},
		{"", []string{"change", "define"}, []string{"change define needs FILE (chunks change define [flags] FILE; - reads stdin)"}},
		{"", []string{"change", "show"}, []string{"change show needs NAME"}},
		{"", []string{"change", "drop", "a", "b"}, []string{"change drop takes one NAME argument, got 2"}},
		{"", []string{"change", "show", "Bad-name"}, []string{`name: must be 1 to 40`, `"Bad-name"`}},
		{holdPlan("p1", 2, 1), []string{"register", "--change", "", "-"}, []string{`change: must be the name of a declared change, got ""`}},
		{`{"job_id": "p1", "tenant": "7", "targets": [], "chunk_size": 2, "allow_partial": true}`, []string{"check", "--change", "hold_payment", "-"}, []string{"targets: must be a list of 1 to 10000 targets, got 0"}},
		{`{"job_id": "p1", "tenant": "7", "targets": [1], "chunk_size": 2, "allow_partial": true}`, []string{"register", "--change", "hold_payment", "-"}, []string{"targets[0]: must be an object of the change's fields, got 1"}},
		{`{"job_id": "p1", "tenant": "7", "targets": [{"a": 1, "a": 2}], "chunk_size": 2, "allow_partial": true}`, []string{"register", "--change", "hold_payment", "-"}, []string{`targets[0]: duplicate key "a"`}},
	} {
		wantExit(t, chunksIn(t, nil, c.stdin, append([]string{"--dsn", "host=/nonexistent"}, c.args...)...), 2, c.parts...)
	}
}

// The change commands on a real server: define (new, the same again, a
// conflict, a bad definition), list, show, register --change, check
// --change, run, drain, report and inspect of a bigint-keyed job and of a
// uuid-keyed one, and drop (refused while a job exists).
func TestChangeRun(t *testing.T) {
	l := clitest.NewLab(t)
	shop := userTables(t, l)
	d := labDeps(l)
	defFile := writeFile(t, "hold.json", pgtest.HoldPayment(shop))
	def := parsed(t, parseChangeDefine, "change", "define", defFile)
	wantRunOut(t, runChangeDefine, d, def, "defined change hold_payment on "+shop+".payments (its function: apply_hold_payment; chunks change show hold_payment prints it)\n")
	wantRunOut(t, runChangeDefine, d, def, "change hold_payment was already defined with this definition; nothing changed\n")
	wantOut(t, chunksIn(t, l, "", "change", "define", "--json", defFile), `{"created":false,"name":"hold_payment"}`+"\n")
	other := strings.Replace(pgtest.HoldPayment(shop), `"on_hold"`, `"held"`, 1)
	wantExit(t, chunksIn(t, l, other, "change", "define", "-"), 3, "hold_payment")
	wantExit(t, chunksIn(t, l, strings.NewReplacer(`"hold_payment"`, `"other"`, `"amount_cents"`, `"amount"`).Replace(pgtest.HoldPayment(shop)), "change", "define", "-"), 2, "amount", shop+".payments")
	l.Exec(t, fmt.Sprintf(`select define_change('{"name": "opt_out", "table": "%s.contacts", "key": "id", "expect": ["email"], "set": {"opted_out": true}}')`, shop))

	list := wantRun(t, runChangeList, d, &noArgs{})
	if !clitest.ContainsAll(list, "CHANGE", "hold_payment", shop+".payments", "opt_out", shop+".contacts") {
		t.Errorf("change list:\n%s", list)
	}
	var summaries []driver.ChangeSummary
	decodeJSON(t, wantRun(t, runChangeList, deps{dsn: d.dsn, schema: d.schema, json: true}, &noArgs{}), &summaries)
	if len(summaries) != 2 || summaries[0].Name != "hold_payment" || summaries[1].Name != "opt_out" || summaries[0].Jobs != 0 {
		t.Errorf("change list --json: %+v", summaries)
	}
	show := wantRun(t, runChangeShow, d, &changeNameOptions{Name: "hold_payment"})
	if !clitest.ContainsAll(show, "change hold_payment on "+shop+".payments: 0 jobs, defined by", "digest ", `"set_from_target": {`,
		"generated SQL (apply_hold_payment, SECURITY DEFINER", "CREATE OR REPLACE FUNCTION "+l.Name+".apply_hold_payment(") {
		t.Errorf("change show:\n%s", show)
	}
	wantRunOut(t, runChangeShow, d, &changeNameOptions{Name: "nope"}, "no change nope is defined\n")
	wantOut(t, chunksIn(t, l, "", "change", "show", "--json", "nope"), "null\n")

	// A job of it: check, register, check again, run, drain, report, inspect.
	plan := holdPlan("p1", 2, 3, 1, 2)
	r := chunksIn(t, l, holdPlan("p0", 2, 1, 9), "check", "--change", "hold_payment", "-")
	if r.Code != 3 || !clitest.ContainsAll(r.Stdout, "job p0: the id is free", "payment_id 9: missing", "1 of 2 targets would be changed now; 1 would not") ||
		!strings.Contains(r.Stderr, "check: job p0: 1 of 2 targets would not be changed") {
		t.Errorf("check --change of a missing row: %v", r)
	}
	wantOut(t, chunksIn(t, l, plan, "check", "--change", "hold_payment", "-"), "job p1: the id is free; register would create the job\n3 of 3 targets would be changed now; 0 would not\n")
	wantOut(t, chunksIn(t, l, plan, "register", "--change", "hold_payment", "-"), "registered job p1 of change hold_payment: 3 targets of 7, 2 per chunk\n")
	wantOut(t, chunksIn(t, l, plan, "register", "--json", "--change", "hold_payment", "-"),
		`{"change":"hold_payment","created":false,"digest":"`+pgtest.MustString(t, l.Conn, "select job_digest('p1')")+`","job_id":"p1"}`+"\n")
	wantOut(t, chunksIn(t, l, "", "run", "p1"), "job p1: changed 1-2; next_index 2\n")
	wantOut(t, chunksIn(t, l, "", "drain", "--json", "p1"), `{"calls":1,"processed":[3],"next_index":3,"done":true}`+"\n")
	l.Exec(t, "update "+shop+".payments set status = 'refunded' where payment_id = 2")
	report := wantRun(t, runReport, d, &jobOptions{Job: driver.JobRef{ID: "p1"}})
	if !clitest.ContainsAll(report, "│ KEY │ STATUS   │", "│   2 │ drifted  │", "job p1: 3 approved, 3 committed, 0 remaining: 2 matching, 1 drifted, 0 missing") {
		t.Errorf("report:\n%s", report)
	}
	inspect := wantRun(t, runInspect, d, &jobOptions{Job: driver.JobRef{ID: "p1"}})
	if !clitest.ContainsAll(inspect, "job p1 of tenant 7, change hold_payment: 3 of 3 targets committed, 2 per chunk",
		`"payment_id": 1`, "committed") {
		t.Errorf("inspect:\n%s", inspect)
	}
	wantExit(t, chunksIn(t, l, "", "change", "drop", "hold_payment"), 3, "hold_payment")

	// A uuid key: keys as strings, in text and in JSON.
	a, b := "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"
	l.Exec(t, "select register_change('opt_out', $1)", fmt.Sprintf(`{"job_id": "c1", "tenant": "crm", "chunk_size": 1, "allow_partial": true,
	  "targets": [{"id": %q, "email": "b@example.com"}, {"id": %q, "email": "a@example.com"}]}`, b, a))
	wantOut(t, chunksIn(t, l, "", "run", "--json", "c1"), fmt.Sprintf(`{"processed":[%q],"next_index":1,"done":false}`, a)+"\n")
	wantOut(t, chunksIn(t, l, "", "drain", "c1"), "job c1: 1 call changed "+b+"; next_index 2; the job is done\n")
	wantOut(t, chunksIn(t, l, "", "report", "--json", "c1"), fmt.Sprintf(`{"approved":[%[1]q,%[2]q],"committed":[%[1]q,%[2]q],"remaining":[],"matching":[%[1]q,%[2]q],"drifted":[],"missing":[]}`, a, b)+"\n")
	report = wantRun(t, runReport, d, &jobOptions{Job: driver.JobRef{ID: "c1"}})
	if !clitest.ContainsAll(report, a+" │ matching", b+" │ matching", "job c1: 2 approved, 2 committed") {
		t.Errorf("report c1:\n%s", report)
	}
	var job driver.Job
	decodeJSON(t, chunksIn(t, l, "", "inspect", "--json", "c1").Stdout, &job)
	if job.Change != "opt_out" || len(job.ChangeTargets) != 2 || len(job.Targets) != 0 {
		t.Errorf("inspect --json c1: %+v", job)
	}

	// Drop: refused while a job exists; a change without jobs goes.
	l.Exec(t, fmt.Sprintf(`select define_change('{"name": "spare", "table": "%s.contacts", "key": "id", "expect": ["email"], "set": {"opted_out": false}}')`, shop))
	wantRunOut(t, runChangeDrop, d, &changeNameOptions{Name: "spare"}, "dropped change spare and its function\n")
	wantOut(t, chunksIn(t, l, "", "change", "drop", "--json", "spare"), `{"dropped":false,"name":"spare"}`+"\n")
}

// chunks change retire: refused while a job of the change has not ended;
// then its functions go, its job still reports, and a new definition
// under the name is a new version.
func TestChangeRetireRun(t *testing.T) {
	l := clitest.NewLab(t)
	shop := userTables(t, l)
	l.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	l.Exec(t, "select register_change('hold_payment', $1)", holdPlan("p1", 2, 1, 2))
	wantExit(t, chunksIn(t, l, "", "change", "retire", "hold_payment"), 3, "change hold_payment: 1 job of it has not ended")
	runChunk(t, l, "p1")
	digest := pgtest.MustString(t, l.Conn, "select digest from changes")
	wantOut(t, chunksIn(t, l, "", "change", "retire", "hold_payment"),
		"retired change hold_payment (digest "+digest+"): its functions are dropped; report still answers for its 1 job\n")
	wantExit(t, chunksIn(t, l, "", "change", "retire", "hold_payment"), 3, "change hold_payment: not defined (or already retired)")
	if r := chunksIn(t, l, "", "report", "p1"); r.Code != 0 || !strings.Contains(r.Stdout, "job p1: 2 approved, 2 committed, 0 remaining: 2 matching") {
		t.Errorf("report after retire: %v", r)
	}
	wantOut(t, chunksIn(t, l, strings.Replace(pgtest.HoldPayment(shop), `"on_hold"`, `"held"`, 1), "change", "define", "-"),
		"defined change hold_payment on "+shop+".payments (its function: apply_hold_payment; chunks change show hold_payment prints it)\n")
}
