package cli

import (
	"testing"

	"github.com/chunks-dev/chunks/driver"
)

// chunks campaign report says how a campaign is tied to its undo, as
// chunks report does for a job: after campaign undo, the campaign's report
// (its committed orders now drifted, pending again) names the undo
// campaign, and the undo's report names the campaign it undoes; --json has
// both as undoes and undone_by. Before the undo there is no such line.
func TestCampaignReportSaysUndone(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.Exec(t, "insert into orders (id, tenant, qty, state, revision) select i, 'acme', 1 + i % 3, 'pending', 0 from generate_series(1, 20) i")
	wantOK(t, l.Chunks(t, "campaign", "create", "--tenant", "acme", "--chunk-size", "5", "--allow-partial",
		"--from-query", "select id, revision, qty from orders where tenant = 'acme'", "spring"))
	wantOK(t, l.Chunks(t, "drain", "spring-000001"))
	l.Exec(t, "update orders set qty = 9, revision = revision + 1 where id = 7")
	if got, want := wantOK(t, l.Chunks(t, "campaign", "report", "spring")),
		"campaign spring: 20 targets, 20 committed, 0 remaining: 19 matching, 1 drifted 7, 0 missing none\n"; got != want {
		t.Fatalf("report before the undo:\n got %q\nwant %q", got, want)
	}
	wantJSON(t, l.Chunks(t, "--json", "campaign", "report", "spring"), driver.CampaignDrift{Name: "spring", Targets: 20, Committed: 20,
		Matching: 19, DriftedCount: 1, Drifted: []driver.Key{driver.IntKey(7)}, Missing: []driver.Key{}})

	wantOK(t, l.Chunks(t, "campaign", "undo", "spring"))
	wantOK(t, l.Chunks(t, "drain", "spring-undo-000001"))
	if got, want := wantOK(t, l.Chunks(t, "campaign", "report", "spring")),
		"campaign spring: 20 targets, 20 committed, 0 remaining: 0 matching, 20 drifted 1-20, 0 missing none\n"+
			"campaign spring was undone by spring-undo (chunks campaign report spring-undo shows what it restored)\n"; got != want {
		t.Errorf("report after the undo:\n got %q\nwant %q", got, want)
	}
	if got, want := wantOK(t, l.Chunks(t, "campaign", "report", "spring-undo")),
		"campaign spring-undo: 19 targets, 19 committed, 0 remaining: 19 matching, 0 drifted none, 0 missing none\n"+
			"campaign spring-undo is the undo of spring: its matching rows are as they were before spring\n"; got != want {
		t.Errorf("report of the undo:\n got %q\nwant %q", got, want)
	}
	undo := "spring-undo"
	wantJSON(t, l.Chunks(t, "--json", "campaign", "report", "spring"), driver.CampaignDrift{Name: "spring", Targets: 20, Committed: 20,
		DriftedCount: 20, Drifted: intKeys(1, 20), Missing: []driver.Key{},
		UndoneBy: &undo})
	spring := "spring"
	wantJSON(t, l.Chunks(t, "--json", "campaign", "report", "spring-undo"), driver.CampaignDrift{Name: "spring-undo", Targets: 19,
		Committed: 19, Matching: 19, Drifted: []driver.Key{}, Missing: []driver.Key{}, Undoes: &spring})
}

// intKeys is the integer keys from to to, in order.
func intKeys(from, to int64) []driver.Key {
	keys := []driver.Key{}
	for n := from; n <= to; n++ {
		keys = append(keys, driver.IntKey(n))
	}
	return keys
}
