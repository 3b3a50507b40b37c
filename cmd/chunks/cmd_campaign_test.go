package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

func TestCampaignOptions(t *testing.T) {
	got := parsed(t, parseCampaignCreate, "campaign", "create", "--tenant", "acme", "--chunk-size", "2", "--allow-partial", "spring", "-")
	if want := (campaignCreateOptions{Spec: driver.CampaignSpec{Name: "spring", Tenant: "acme", ChunkSize: 2, QueueWindow: 16}, File: "-", AllowPartial: true}); *got != want {
		t.Errorf("create from stdin: got %+v, want %+v", *got, want)
	}
	got = parsed(t, parseCampaignCreate, "campaign", "create", "--tenant", "acme", "--chunk-size", "3", "--allow-partial", "--queue-window", "2", "--from-query", "select 1", "q")
	if want := (campaignCreateOptions{Spec: driver.CampaignSpec{Name: "q", Tenant: "acme", ChunkSize: 3, QueueWindow: 2}, Query: "select 1", AllowPartial: true}); *got != want {
		t.Errorf("create from a query: got %+v, want %+v", *got, want)
	}
	got = parsed(t, parseCampaignCreate, "campaign", "create", "--change", "hold_payment", "--tenant", "7", "--chunk-size", "2", "--allow-partial", "--from-query", "select 1", "hp")
	if want := (campaignCreateOptions{Spec: driver.CampaignSpec{Name: "hp", Tenant: "7", ChunkSize: 2, QueueWindow: 16, Change: "hold_payment"}, Query: "select 1", AllowPartial: true}); *got != want {
		t.Errorf("create of a change: got %+v, want %+v", *got, want)
	}
	for _, sub := range []string{"status", "report", "pause", "resume"} {
		if got := *parsed(t, parseCampaign, "campaign", sub, "spring"); got != (campaignOptions{Name: "spring"}) {
			t.Errorf("%s: got %+v", sub, got)
		}
	}
	if got := *parsed(t, parseCampaignCheck, "campaign", "check", "--max-listed", "5", "spring"); got != (campaignCheckOptions{Name: "spring", MaxListed: 5}) {
		t.Errorf("check: got %+v", got)
	}
	if got := *parsed(t, parseCampaignCheck, "campaign", "check", "spring"); got != (campaignCheckOptions{Name: "spring", MaxListed: 100}) {
		t.Errorf("check without --max-listed: got %+v", got)
	}
	if got := *parsed(t, parseCampaignUndo, "campaign", "undo", "--as", "back", "spring"); got != (campaignUndoOptions{Name: "spring", As: "back"}) {
		t.Errorf("undo: got %+v", got)
	}

	spec := driver.CampaignSpec{Name: "spring", Tenant: "acme", ChunkSize: 2}
	create := func(edit func(o *campaignCreateOptions)) *campaignCreateOptions {
		o := &campaignCreateOptions{Spec: spec, File: "-", AllowPartial: true}
		edit(o)
		return o
	}
	wantInvalid(t, create(func(o *campaignCreateOptions) { o.AllowPartial = false }), "--allow-partial must be given")
	wantInvalid(t, create(func(o *campaignCreateOptions) { o.Spec.Tenant = "" }), "tenant: must be 1 to 64")
	wantInvalid(t, create(func(o *campaignCreateOptions) { o.Spec.ChunkSize = 11 }), "chunk_size", "11")
	wantInvalid(t, create(func(o *campaignCreateOptions) { o.Spec.QueueWindow = 10001 }), "queue_window: must be between 1 and 10000, got 10001")
	wantInvalid(t, create(func(o *campaignCreateOptions) { o.Spec.Name = strings.Repeat("n", 58) }), "name: must be at most 57 characters")
	wantInvalid(t, create(func(o *campaignCreateOptions) { o.Spec.Name = "a b" }), "name: must be 1 to 64")
	wantInvalid(t, create(func(o *campaignCreateOptions) { o.Spec.Change = "Hold payment" }), `change: must be 1 to 40 lower-case ASCII letters, digits or _, starting with a letter, got "Hold payment"`)
	wantInvalid(t, &campaignOptions{Name: ""}, "name: must be 1 to 64")
	wantInvalid(t, &campaignCheckOptions{Name: "spring", MaxListed: -1}, "max_listed: must be between 0 and 100000, got -1")
	wantInvalid(t, &campaignCheckOptions{Name: "spring", MaxListed: 100001}, "max_listed: must be between 0 and 100000, got 100001")
	wantInvalid(t, &campaignCheckOptions{Name: "a;b", MaxListed: 1}, "name: must be 1 to 64")
	wantInvalid(t, &campaignUndoOptions{Name: "spring", As: strings.Repeat("u", 58)}, "undo_name: must be at most 57 characters (job ids add -NNNNNN), got 58")
	wantInvalid(t, &campaignUndoOptions{Name: "spring", As: "x y"}, "undo_name: must be 1 to 64")
}

// Every campaign subcommand refuses a flag typed after NAME the one way
// (exit 2, the flag bounded, nothing connected: no --dsn is given), and a
// missing required flag is a usage error too, not urfave's "Required flags
// not set" (exit 1).
func TestCampaignFlagsAfterName(t *testing.T) {
	long := "--tenant=" + strings.Repeat("x", 292) // 301 characters
	for _, c := range []struct {
		args  []string
		usage string
	}{
		{[]string{"create", "NAME"}, "campaign create [flags] NAME FILE"},
		{[]string{"create", "NAME", "-"}, "campaign create [flags] NAME FILE"},
		{[]string{"create", "--from-query", "select 1", "NAME"}, "campaign create [flags] NAME"},
		{[]string{"status", "NAME"}, "campaign status [flags] NAME"},
		{[]string{"report", "NAME"}, "campaign report [flags] NAME"},
		{[]string{"check", "NAME"}, "campaign check [flags] NAME"},
		{[]string{"undo", "NAME"}, "campaign undo [flags] NAME"},
		{[]string{"pause", "NAME"}, "campaign pause [flags] NAME"},
		{[]string{"resume", "NAME"}, "campaign resume [flags] NAME"},
	} {
		args := append(append([]string{"campaign"}, c.args...), long, "--max-chunks", "3")
		r := chunksIn(t, nil, "", args...)
		wantExit(t, r, 2, "chunks: usage: flag --tenant=xxx", "… (301 characters) after the campaign name: put flags before the campaign name (chunks "+c.usage+")")
		if len(r.Stderr) > 250 {
			t.Errorf("chunks %s: the message is not bounded: %d bytes", c.args, len(r.Stderr))
		}
	}
	wantExit(t, chunksIn(t, nil, "", "campaign", "create", "spring", "-"), 2,
		"chunks: usage: campaign create needs --tenant, --chunk-size, --allow-partial (chunks campaign create --help)")
	wantExit(t, chunksIn(t, nil, "", "campaign", "create", "--tenant", "acme", "--chunk-size", "2", "--allow-partial=false", "spring", "-"), 2,
		"chunks: usage: --allow-partial must be given: each chunk commits on its own")
	wantExit(t, chunksIn(t, nil, "", "campaign", "status"), 2, "chunks: usage: campaign status needs NAME (chunks campaign status [flags] NAME)")
	wantExit(t, chunksIn(t, nil, "", "campaign", "undo", "a", "b"), 2, "chunks: usage: campaign undo takes one NAME argument, got 2: a b")
}

func TestCampaignRun(t *testing.T) {
	l := clitest.NewLab(t)
	l.Exec(t, `insert into orders (id, tenant, qty, state, revision) values (7, 'acme', 2, 'pending', 0), (3, 'acme', 1, 'pending', 4), (5, 'acme', 9, 'pending', 1)`)
	d := labDeps(l)
	targets := `{"id": 7, "revision": 0, "qty": 2}` + "\n" + `{"id": 3, "revision": 4, "qty": 1}` + "\n" + `{"id": 5, "revision": 1, "qty": 9}` + "\n"
	create := []string{"campaign", "create", "--tenant", "acme", "--chunk-size", "2", "--allow-partial", "spring", "-"}
	r := chunksIn(t, l, targets, create...)
	first, _, _ := strings.Cut(r.Stdout, " (digest ")
	if r.Code != 0 || first != "created campaign spring: 3 orders of acme in 1 job of up to 64, 2 per chunk" {
		t.Fatalf("create: %v", r)
	}
	again := chunksIn(t, l, targets, append([]string{"--json"}, create...)...)
	var created driver.CampaignCreated
	if err := json.Unmarshal([]byte(again.Stdout), &created); err != nil {
		t.Fatalf("create --json: %v: %v", err, again)
	}
	if created.Created || created.Targets != 3 || created.Jobs != 1 || r.Stdout != first+" (digest "+created.Digest[:12]+")\n" {
		t.Fatalf("create again: %+v after %q", created, r.Stdout)
	}
	d.stdin = strings.NewReader(targets)
	o := &campaignCreateOptions{Spec: driver.CampaignSpec{Name: "spring", Tenant: "acme", ChunkSize: 2}, File: "-", AllowPartial: true}
	if got, want := wantRun(t, runCampaignCreate, d, o), "campaign spring was already created with this approval; nothing changed\n"; got != want {
		t.Errorf("create again: got %q, want %q", got, want)
	}

	spring := &campaignOptions{Name: "spring"}
	if got, want := wantRun(t, runCampaignStatus, d, spring),
		"campaign spring: 3 targets, 0 committed, 3 remaining; jobs: 0 done, 0 running, 1 queued, 0 paused, 0 waiting of 1; rate unknown, ETA unknown\n"; got != want {
		t.Errorf("status: got %q, want %q", got, want)
	}
	if got, want := wantRun(t, runCampaignCheck, d, &campaignCheckOptions{Name: "spring", MaxListed: 100}),
		"campaign spring: 3 of 3 targets remaining, 3 ok, 0 with a problem\n"; got != want {
		t.Errorf("check: got %q, want %q", got, want)
	}
	// The first chunk commits orders 3 and 5; then 3 drifts and 7 is no
	// longer pending: the check lists 7, and is a conflict.
	if _, err := driver.RunChunk(ctx, l.Conn, "spring-000001", nil); err != nil {
		t.Fatal(err)
	}
	l.Exec(t, `update orders set qty = qty + 1, revision = revision + 1 where id in (3, 7)`)
	r = chunksIn(t, l, "", "campaign", "check", "spring")
	if r.Code != 3 || !strings.HasSuffix(r.Stdout, "campaign spring: 1 of 3 targets remaining, 0 ok, 1 with a problem\n") ||
		strings.Count(r.Stdout, "\n") != 2 || !strings.Contains(r.Stdout, "7") ||
		r.Stderr != "chunks: conflict: campaign spring: 1 targets cannot take their change now\n" {
		t.Errorf("check after drift: %v", r)
	}
	if got, want := wantRun(t, runCampaignReport, d, spring),
		"campaign spring: 3 targets, 2 committed, 1 remaining: 1 matching, 1 drifted 3, 0 missing none\n"; got != want {
		t.Errorf("report: got %q, want %q", got, want)
	}
	report, err := driver.CampaignReport(ctx, l.Conn, "spring")
	if err != nil {
		t.Fatal(err)
	}
	wantOut(t, chunksIn(t, l, "", "--json", "campaign", "report", "spring"), clitest.MustJSON(t, report)+"\n")
	status, err := driver.CampaignStatus(ctx, l.Conn, "spring")
	if err != nil {
		t.Fatal(err)
	}
	r = chunksIn(t, l, "", "campaign", "status", "--json", "spring")
	var got driver.CampaignProgress
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || r.Code != 0 {
		t.Fatalf("status --json: %v: %v", err, r)
	}
	got.RatePerSecond, got.ETASeconds = status.RatePerSecond, status.ETASeconds // they change with the clock
	if g, w := clitest.MustJSON(t, got), clitest.MustJSON(t, status); g != w || status.Committed != 2 {
		t.Errorf("status --json: got %s, want %s", g, w)
	}

	if got, want := wantRun(t, runCampaignPause, d, spring), "paused campaign spring: 1 job paused\n"; got != want {
		t.Errorf("pause: got %q, want %q", got, want)
	}
	wantOut(t, chunksIn(t, l, "", "campaign", "pause", "spring"), "campaign spring was already paused; nothing changed\n")
	if got, want := wantRun(t, runCampaignUndo, d, &campaignUndoOptions{Name: "spring", As: "spring-back"}),
		"registered undo campaign spring-back of spring: 1 order in 1 job; left alone: drifted 3, missing none\n"; got != want {
		t.Errorf("undo: got %q, want %q", got, want)
	}
	wantOut(t, chunksIn(t, l, "", "campaign", "resume", "--json", "spring"), `{"name":"spring","changed":true,"jobs":1}`+"\n")
	if got, want := wantRun(t, runCampaignResume, d, spring), "campaign spring was not paused; nothing changed\n"; got != want {
		t.Errorf("resume again: got %q, want %q", got, want)
	}
	wantExit(t, chunksIn(t, l, "", "campaign", "status", "nope"), 3, "chunks: conflict: campaign nope: not found")
	wantExit(t, chunksIn(t, l, "nope\n", "campaign", "create", "--tenant", "acme", "--chunk-size", "2", "--allow-partial", "bad", "-"), 2, "chunks: invalid: line 1")
}

// chunks campaign create --change: a campaign of a declared change from a
// query whose columns are named as the change's target fields, and from
// JSON Lines on stdin; its status, check, report (with a drifted and a
// missing row), its undo drained and reported; a query missing a field, with
// an extra column or a wrong type is exit 2 naming the row and the field,
// with nothing written.
func TestCampaignOfAChangeRun(t *testing.T) {
	l := clitest.NewLab(t)
	shop := userTables(t, l)
	d := labDeps(l)
	if r := chunksIn(t, l, pgtest.HoldPayment(shop), "change", "define", "-"); r.Code != 0 {
		t.Fatalf("change define: %v", r)
	}
	create := []string{"campaign", "create", "--change", "hold_payment", "--tenant", "7", "--chunk-size", "2", "--allow-partial"}
	from := " from " + shop + ".payments where payment_id <= 3"
	for _, c := range []struct{ query, msg string }{
		{"select payment_id, lock_version, amount_cents" + from, "chunks: invalid: row 1: missing field reason\n"},
		{"select payment_id, lock_version, amount_cents, 'x' as reason, status" + from, "chunks: invalid: row 1: unexpected field \"status\"\n"},
		{"select payment_id, lock_version::text, amount_cents, 'x' as reason" + from,
			"chunks: invalid: row 1.lock_version: must be a number, a value of column lock_version (integer), got \"3\"\n"},
	} {
		r := chunksIn(t, l, "", append(create, "--from-query", c.query, "bad")...)
		if r.Code != 2 || r.Stderr != c.msg || r.Stdout != "" {
			t.Errorf("%s: %v", c.query, r)
		}
	}
	if n := mustCount(t, l, "select count(*) from campaigns"); n != 0 {
		t.Fatalf("refused campaigns left %d campaigns", n)
	}

	r := chunksIn(t, l, "", append(create, "--from-query", "select payment_id, lock_version, amount_cents, 'chargeback' as reason"+from, "holds")...)
	first, _, _ := strings.Cut(r.Stdout, " (digest ")
	if r.Code != 0 || first != "created campaign holds of change hold_payment: 3 targets of 7 in 1 job of up to 200, 2 per chunk" {
		t.Fatalf("create from a query: %v", r)
	}
	lines := `{"payment_id": 4, "lock_version": 3, "amount_cents": 400, "reason": "fraud"}` + "\n"
	var created driver.CampaignCreated
	r = chunksIn(t, l, lines, append(append([]string{"--json"}, create...), "more", "-")...)
	decodeJSON(t, r.Stdout, &created)
	if r.Code != 0 || !created.Created || created.Targets != 1 || created.Jobs != 1 {
		t.Fatalf("create from stdin: %+v from %v", created, r)
	}
	wantExit(t, chunksIn(t, l, "{\"payment_id\": 5}\n", append(create, "bad", "-")...), 2, "chunks: invalid: line 1: missing field lock_version")

	holds := &campaignOptions{Name: "holds"}
	if got, want := wantRun(t, runCampaignCheck, d, &campaignCheckOptions{Name: "holds", MaxListed: 100}),
		"campaign holds: 3 of 3 targets remaining, 3 ok, 0 with a problem\n"; got != want {
		t.Errorf("check: got %q, want %q", got, want)
	}
	r = chunksIn(t, l, "", "drain", "holds-000001")
	if r.Code != 0 {
		t.Fatalf("drain: %v", r)
	}
	l.Exec(t, "update "+shop+".payments set hold_reason = 'other' where payment_id = 2")
	l.Exec(t, "delete from "+shop+".payments where payment_id = 3")
	if got, want := wantRun(t, runCampaignStatus, d, holds),
		"campaign holds: 3 targets, 3 committed, 0 remaining; jobs: 1 done, 0 running, 0 queued, 0 paused, 0 waiting of 1; rate "; !strings.HasPrefix(got, want) || strings.Contains(got, "drift") {
		t.Errorf("status: got %q, want %q... (no drift: report's)", got, want)
	}
	if got, want := wantRun(t, runCampaignReport, d, holds),
		"campaign holds: 3 targets, 3 committed, 0 remaining: 1 matching, 1 drifted 2, 1 missing 3\n"; got != want {
		t.Errorf("report: got %q, want %q", got, want)
	}
	wantOut(t, chunksIn(t, l, "", "--json", "campaign", "report", "holds"),
		`{"name":"holds","targets":3,"committed":3,"remaining":0,"matching":1,"drifted_count":1,"missing_count":1,"drifted":[2],"missing":[3],"undoes":null,"undone_by":null}`+"\n")
	if n := mustCount(t, l, "select count(*) from change_audit"); n != 3 {
		t.Errorf("change_audit has %d rows, want 3", n)
	}

	// Its undo: the one row still as it left it gets its values back, by
	// an undo job of the change; the drifted and missing ones are left alone.
	if got, want := wantRun(t, runCampaignUndo, d, &campaignUndoOptions{Name: "holds"}),
		"registered undo campaign holds-undo of holds: 1 row in 1 job; left alone: drifted 2, missing 3\n"; got != want {
		t.Errorf("undo: got %q, want %q", got, want)
	}
	if r := chunksIn(t, l, "", "drain", "holds-undo-000001"); r.Code != 0 {
		t.Fatalf("drain the undo: %v", r)
	}
	var rows string
	if err := l.Conn.QueryRow(ctx, "select string_agg(format('%s %s %s %s', payment_id, status, coalesce(hold_reason, '-'), lock_version), ', ' order by payment_id) from "+
		shop+".payments where payment_id <= 3").Scan(&rows); err != nil || rows != "1 captured - 5, 2 on_hold other 4" {
		t.Errorf("rows after the undo: %s, %v; want 1 captured - 5, 2 on_hold other 4", rows, err)
	}
	if got, want := wantRun(t, runCampaignReport, d, &campaignOptions{Name: "holds-undo"}),
		"campaign holds-undo: 1 targets, 1 committed, 0 remaining: 1 matching, 0 drifted none, 0 missing none\n"+
			"campaign holds-undo is the undo of holds: its matching rows are as they were before holds\n"; got != want {
		t.Errorf("undo report: got %q, want %q", got, want)
	}
	if got, want := wantRun(t, runCampaignReport, d, holds),
		"campaign holds: 3 targets, 3 committed, 0 remaining: 0 matching, 2 drifted 1-2, 1 missing 3\n"+
			"campaign holds was undone by holds-undo (chunks campaign report holds-undo shows what it restored)\n"; got != want {
		t.Errorf("report after the undo: got %q, want %q", got, want)
	}
	wantOut(t, chunksIn(t, l, "", "campaign", "undo", "holds"), "campaign holds-undo already is the undo of holds; nothing changed\n")
	wantOut(t, chunksIn(t, l, "", "--json", "campaign", "undo", "holds"),
		`{"name":"holds-undo","undoes":"holds","created":false,"jobs":1,"targets":1,"change":"hold_payment"}`+"\n")
	wantExit(t, chunksIn(t, l, "", "campaign", "undo", "more"), 3, "chunks: conflict: campaign more: nothing to undo: no committed row of it is as it left it")
	wantExit(t, chunksIn(t, l, "", "campaign", "undo", "holds-undo"), 3, "chunks: conflict: campaign holds-undo: is the undo of holds; an undo is not undone")
}

// mustCount is the number sql (a count) returns on l.
func mustCount(t testing.TB, l *clitest.Lab, sql string) int64 {
	t.Helper()
	var n int64
	if err := l.Conn.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// campaign create --tenant-from: one campaign over two merchants from a
// query, a job each, and campaign status by tenant. --tenant-from needs
// --change and excludes --tenant; a row without the column is named.
func TestCampaignOverManyTenantsRun(t *testing.T) {
	l := clitest.NewLab(t)
	shop := userTables(t, l)
	d := labDeps(l)
	l.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	l.Exec(t, "update "+shop+".payments set merchant_id = 8 where payment_id > 2")
	query := "select merchant_id, payment_id, lock_version, amount_cents, 'chargeback' as reason from " + shop + ".payments"
	create := []string{"campaign", "create", "--change", "hold_payment", "--tenant-from", "merchant_id", "--chunk-size", "1", "--allow-partial"}
	wantExit(t, chunksIn(t, l, "", "campaign", "create", "--tenant-from", "merchant_id", "--chunk-size", "1", "--allow-partial", "--from-query", query, "m"),
		2, "tenant_from: a campaign over many tenants is a declared change's")
	wantExit(t, chunksIn(t, l, "", append(create, "--tenant", "7", "--from-query", query, "m")...), 2, "tenant: give one tenant, or the field")
	wantExit(t, chunksIn(t, l, "", append(create, "--from-query", "select payment_id, lock_version, amount_cents, 'x' as reason from "+shop+".payments", "m")...),
		2, `row 1: has no "merchant_id" (tenant_from)`)
	r := chunksIn(t, l, "", append(create, "--from-query", query, "m")...)
	if first, _, _ := strings.Cut(r.Stdout, " (digest "); r.Code != 0 || first != "created campaign m of change hold_payment: 4 targets of each one's merchant_id in 2 jobs of up to 100, 1 per chunk" {
		t.Fatalf("create: %v", r)
	}
	got := wantRun(t, runCampaignStatus, d, &campaignOptions{Name: "m"})
	if !clitest.ContainsAll(got, "campaign m: 4 targets, 0 committed, 4 remaining; jobs: ", "  tenant 7: 0 of 2 targets committed; 0 of 1 job done\n",
		"  tenant 8: 0 of 2 targets committed; 0 of 1 job done\n") {
		t.Errorf("status:\n%s", got)
	}
}
