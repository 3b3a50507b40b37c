package main

import (
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

func TestPlanOptions(t *testing.T) {
	plan := testPlan("j1", 2, 1)
	path := writeFile(t, "plan.json", clitest.MustJSON(t, plan))
	for _, cmd := range []string{"register", "check"} {
		if got := parsed(t, parsePlan, cmd, path); clitest.MustJSON(t, got.Plan) != clitest.MustJSON(t, plan) {
			t.Errorf("%s: got %+v, want %+v", cmd, got.Plan, plan)
		}
		wantExit(t, chunksIn(t, nil, `{"job_id": "j1"}`, cmd, "-"), 2, `plan: missing key "tenant"`)
		wantExit(t, chunksIn(t, nil, "", cmd, "a.json", "b.json"), 2, cmd+" takes one PLAN.json argument, got 2: a.json b.json")
	}
	bad := testPlan("j1", 2, 1)
	bad.ChunkSize = 0
	wantInvalid(t, &planOptions{Plan: bad}, "chunk_size: must be between 1 and 10, got 0")
	bad = testPlan("j1", 2, 1)
	bad.Targets[1].ID = 1
	wantInvalid(t, &planOptions{Plan: bad}, "duplicate id 1")
}

func TestRegisterRun(t *testing.T) {
	l := clitest.NewLab(t)
	l.Exec(t, `insert into orders (id, tenant, qty, state, revision) select i, 'acme', 1, 'pending', 1 from generate_series(1, 2) as i`)
	d := labDeps(l)
	o := &planOptions{Plan: testPlan("j1", 2, 1)}
	wantRunOut(t, runRegister, d, o, "registered job j1: 2 orders of acme, 1 per chunk\n")
	wantRunOut(t, runRegister, d, o, "job j1 was already registered with this approval; nothing changed\n")
	wantOut(t, chunksIn(t, l, clitest.MustJSON(t, o.Plan), "register", "--json", "-"),
		`{"created":false,"digest":"`+pgtest.MustString(t, l.Conn, "select job_digest('j1')")+`","job_id":"j1"}`+"\n")
	other := testPlan("j1", 1, 1)
	wantRunErr(t, runRegister, d, &planOptions{Plan: other}, driver.ErrConflict,
		"conflict: job j1: already registered with different targets")
}
