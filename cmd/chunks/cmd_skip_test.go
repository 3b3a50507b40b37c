package main

import (
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

func TestSkipOptions(t *testing.T) {
	got := parsed(t, parseSkip, "skip", "--reason", "edited", "--tenant", "7", "p1", "5")
	if got.Job != (driver.JobRef{ID: "p1", Tenant: "7"}) || got.Key != "5" || got.Reason != "edited" {
		t.Errorf("parsed %+v", got)
	}
	wantInvalid(t, &skipOptions{Job: driver.JobRef{ID: "p1"}, Key: "5"}, "reason: must say why the target is skipped, got an empty text")
	wantInvalid(t, &skipOptions{Job: driver.JobRef{ID: "p1"}, Key: " ", Reason: "x"}, "KEY: must be the target's key, got an empty text")
	wantInvalid(t, &skipOptions{Job: driver.JobRef{ID: "p1"}, Key: `{"a": [1]}`, Reason: "x"}, "KEY: a composite key is a JSON object of its columns")
	wantExit(t, chunksIn(t, nil, "", "skip", "--reason", "x", "p1"), 2, "skip needs JOB KEY")
	wantExit(t, chunksIn(t, nil, "", "skip", "p1", "5", "--reason", "x"), 2, "flag --reason after the job id")
	wantExit(t, chunksIn(t, nil, "", "campaign", "skip", "--reason", "x", "c"), 2, "campaign skip needs --mismatched")
}

// chunks skip and chunks campaign skip through the binary, on a job of a
// declared change whose row 2 was edited by hand: the worker pauses it,
// campaign skip sets 2 aside and resumes it, chunks skip sets 4 aside
// ahead of its chunk, the job finishes past both, and report lists them.
func TestSkipRun(t *testing.T) {
	l := clitest.NewLab(t)
	shop := userTables(t, l)
	d := labDeps(l)
	l.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	wantOut(t, chunksIn(t, l, holdPlan("p1", 1, 1, 2, 3, 4), "register", "--change", "hold_payment", "-"),
		"registered job p1 of change hold_payment: 4 targets of 7, 1 per chunk\n")
	l.Exec(t, "update "+shop+".payments set amount_cents = 7 where payment_id = 2")
	wantExit(t, chunksIn(t, l, "", "skip", "--reason", "x", "p1", "9"), 3, "job p1: no target has key")
	if got := wantRun(t, runSkip, d, &skipOptions{Job: driver.JobRef{ID: "p1"}, Key: "4", Reason: "not this one"}); got != "job p1: skipped 4 (its row matches now); the job will never change it\n" {
		t.Errorf("skip 4: %q", got)
	}
	r := chunksIn(t, l, "", "skip", "--reason", "again", "p1", "4")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "job p1: 4 was already skipped by ") || !strings.HasSuffix(r.Stdout, " (not this one); nothing changed\n") {
		t.Errorf("skip again: %v", r)
	}
	// Row 2 stops the job's drain; skipped, the job goes on past it.
	wantExitOut(t, chunksIn(t, l, "", "drain", "p1"), 3, "job p1: 1 call changed 1; next_index 1\n", "conflict: payment_id 2: amount_cents is 7, approved 200")
	wantOut(t, chunksIn(t, l, "", "skip", "--reason", "edited by support", "p1", "2"),
		"job p1: skipped 2 (payment_id 2: amount_cents is 7, approved 200); the job will never change it\n")
	wantOut(t, chunksIn(t, l, "", "drain", "--json", "p1"), `{"calls":3,"processed":[3],"next_index":4,"done":true}`+"\n")
	report := wantRun(t, runReport, d, &jobOptions{Job: driver.JobRef{ID: "p1"}})
	if !clitest.ContainsAll(report, "job p1: 4 approved, 2 committed, 0 remaining: 2 matching, 0 drifted, 0 missing, 2 skipped",
		"skipped 2 by ", " (edited by support): payment_id 2: amount_cents is 7, approved 200",
		"skipped 4 by ", " (not this one): its row matched then") {
		t.Errorf("report:\n%s", report)
	}
	var keys driver.ReportKeys
	decodeJSON(t, wantRun(t, runReport, deps{dsn: d.dsn, schema: d.schema, json: true}, &jobOptions{Job: driver.JobRef{ID: "p1"}}), &keys)
	if len(keys.Skipped) != 2 || keys.Skipped[0].Key.String() != "2" || keys.Skipped[1].Reason != "not this one" || keys.Skipped[1].Found != "" {
		t.Errorf("report --json skipped: %+v", keys.Skipped)
	}

	// A campaign: its job c-000001 paused by a worker's pass on row 3's edit.
	targets := strings.Join([]string{
		`{"payment_id": 3, "lock_version": 4, "amount_cents": 300, "reason": "r"}`, `{"payment_id": 1, "lock_version": 4, "amount_cents": 100, "reason": "r"}`}, "\n")
	l.Exec(t, "update "+shop+".payments set lock_version = 4, status = 'captured' where payment_id in (1, 3)")
	if r := chunksIn(t, l, targets, "campaign", "create", "--change", "hold_payment", "--tenant", "7", "--chunk-size", "1",
		"--allow-partial", "c", "-"); r.Code != 0 {
		t.Fatalf("campaign create: %v", r)
	}
	l.Exec(t, "update "+shop+".payments set amount_cents = 1 where payment_id = 3")
	// (p1's queue row, done, goes first; then c-000001's two chunks)
	for range 3 {
		l.Exec(t, "select run_next_chunk('w1')")
	}
	r = chunksIn(t, l, "", "campaign", "skip", "--mismatched", "--reason", "INC-88", "c")
	if r.Code != 0 || r.Stdout != "skipped job c-000001, 3: payment_id 3: amount_cents is 1, approved 300\ncampaign c: skipped 1 target; resumed 1 job\n" {
		t.Errorf("campaign skip: %v", r)
	}
	wantOut(t, chunksIn(t, l, "", "campaign", "skip", "--mismatched", "--reason", "INC-88", "c"),
		"campaign c: no paused job has a target that does not match now; nothing changed\n")
}
