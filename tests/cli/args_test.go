package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// spaced is how chunks lists ids that are not consecutive: "101 104 107".
func spaced(list []int64) string {
	return strings.Trim(fmt.Sprint(list), "[]")
}

// TestCampaignCreateFromStdin: campaign create NAME - reads the targets from
// stdin, as its help and docs/campaigns.md say; the campaign's job holds exactly
// those targets.
func TestCampaignCreateFromStdin(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.Exec(t, `insert into orders values (7, 'alien-desert', 2, 'pending', 0), (3, 'alien-desert', 1, 'pending', 4), (5, 'alien-desert', 9, 'pending', 1)`)
	stdin := `{"id": 7, "revision": 0, "qty": 2}` + "\n" + `{"id": 3, "revision": 4, "qty": 1}` + "\n" + `{"id": 5, "revision": 1, "qty": 9}` + "\n"
	r := clitest.RunWith(t, clitest.Options{Stdin: stdin}, append(l.Globals(), "campaign", "create", "--tenant", "alien-desert", "--chunk-size", "2",
		"--allow-partial", "spring", "-")...)
	if out := wantOK(t, r); !strings.HasPrefix(out, "created campaign spring: 3 orders of alien-desert in 1 job of up to 64, 2 per chunk (digest ") {
		t.Fatalf("campaign create spring -: %q", out)
	}
	job := decode[driver.Job](t, l.Chunks(t, "inspect", "--json", "spring-000001"))
	want := []driver.Target{{ID: 3, Revision: 4, Qty: 1}, {ID: 5, Revision: 1, Qty: 9}, {ID: 7, Revision: 0, Qty: 2}}
	if fmt.Sprint(job.Targets) != fmt.Sprint(want) || job.Tenant != "alien-desert" || job.ChunkSize != 2 {
		t.Fatalf("spring-000001: %+v, want the targets %+v of alien-desert, 2 per chunk", job, want)
	}
}

// TestCommandLineUsageErrors: a missing required flag, a flag typed after
// the positional arguments and an extra argument are usage errors (exit 2,
// "usage: " naming what is wrong, nothing on stdout), refused before any
// connection: nothing is registered.
func TestCommandLineUsageErrors(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	create := []string{"campaign", "create", "--tenant", "alien-desert", "--chunk-size", "2", "--allow-partial"}
	query := "select 1 as id, 0 as revision, 1 as qty"
	for _, c := range []struct {
		args  []string
		parts []string
	}{
		{[]string{"campaign", "create", "--chunk-size", "2", "--allow-partial", "spring", "-"},
			[]string{"usage: campaign create needs --tenant (chunks campaign create --help)"}},
		{[]string{"campaign", "create", "spring", "-"}, []string{"usage: campaign create needs --tenant, --chunk-size, --allow-partial"}},
		{[]string{"campaign", "create", "spring", "--tenant", "alien-desert", "--chunk-size", "2", "--allow-partial", "-"},
			[]string{"usage: flag --tenant after the campaign name: put flags before the campaign name (chunks campaign create [flags] NAME FILE)"}},
		{append(create, "spring", "--from-query", query), []string{"usage: flag --from-query after the campaign name"}},
		{append(create, "--from-query", query, "spring", "-"), []string{"usage: campaign create takes FILE or --from-query, not both"}},
		{append(create, "spring"), []string{"usage: campaign create takes NAME and one FILE (- for stdin), or NAME and --from-query SQL"}},
		{append(create, "spring", "a.json", "b.json"), []string{"usage: campaign create takes NAME FILE, got 3: spring a.json b.json"}},
		{[]string{"campaign", "status", "cu", "extra"}, []string{"usage: campaign status takes one NAME argument, got 2: cu extra"}},
		{[]string{"campaign", "report", "cu", "extra"}, []string{"usage: campaign report takes one NAME argument, got 2: cu extra"}},
		{[]string{"campaign", "check", "cu", "extra"}, []string{"usage: campaign check takes one NAME argument, got 2: cu extra"}},
		{[]string{"campaign", "undo", "cu", "my-rollback"}, []string{"usage: campaign undo takes one NAME argument, got 2: cu my-rollback"}},
		{[]string{"campaign", "pause", "cu", "extra"}, []string{"usage: campaign pause takes one NAME argument, got 2: cu extra"}},
		{[]string{"campaign", "check", "cu", "--max-listed", "1"}, []string{"usage: flag --max-listed after the campaign name"}},
		{[]string{"campaign", "status"}, []string{"usage: campaign status needs NAME (chunks campaign status [flags] NAME)"}},
		{[]string{"inspect", "j", "extra"}, []string{"usage: inspect takes one JOB argument, got 2: j extra"}},
		{[]string{"bench", "x"}, []string{`usage: bench takes no arguments, got ["x"]`}},
		{[]string{"demo", "x", "y"}, []string{`usage: demo takes no arguments, got ["x" "y"]`}},
		{[]string{"router", "install", "x"}, []string{`usage: router install takes no arguments, got ["x"]`}},
		{[]string{"router", "shards", "x"}, []string{`usage: router shards takes no arguments, got ["x"]`}},
		{[]string{"register", "a.json", "b.json"}, []string{"usage: register takes one PLAN.json argument, got 2: a.json b.json"}},
		{[]string{"register"}, []string{"usage: register needs PLAN.json (chunks register [flags] PLAN.json; - reads stdin)"}},
		{[]string{"manifest", "items.json", "--job-id", "j"}, []string{"usage: flag --job-id after ITEMS.json"}},
		{[]string{"manifest", "-"}, []string{"usage: manifest needs --job-id, --tenant, --chunk-size"}},
	} {
		wantFailure(t, l.Chunks(t, c.args...), 2, c.parts...)
	}
	var jobs, campaigns int
	if err := l.Conn.QueryRow(ctx, "select (select count(*) from jobs), (select count(*) from campaigns)").Scan(&jobs, &campaigns); err != nil {
		t.Fatal(err)
	}
	if jobs != 0 || campaigns != 0 {
		t.Fatalf("%d jobs and %d campaigns after the refusals", jobs, campaigns)
	}
}

// TestIntegerFlagsDecimal: integer flags read decimal digits only, where Go's
// flag package reads 010 as 8, 0x10 as 16, 0b11 as 3 and 1_0 as 10; a bad
// value is a usage error naming the flag and the value. Values that do not
// fit PostgreSQL's integer, where they go, are refused the same way (campaign
// check --max-listed 2147483648 was a pgx encode error, exit 1).
func TestIntegerFlagsDecimal(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	j := seedJob(t, l, "festival", 30, 2)
	digits := "want decimal digits (no leading 0, 0x, 0b, 0o or _)"
	int4 := "want an integer from -2147483648 to 2147483647"
	for _, c := range []struct {
		args []string
		part string
	}{
		{[]string{"pause", "--after", "010", j.ID}, `usage: --after "010": ` + digits},
		{[]string{"drain", "--max-chunks", "010", j.ID}, `usage: --max-chunks "010": ` + digits},
		{[]string{"drain", "--workers", "0x2", j.ID}, `usage: --workers "0x2": ` + digits},
		{[]string{"worker", "--concurrency", "0b11"}, `usage: --concurrency "0b11": ` + digits},
		{[]string{"serve", "--http", "127.0.0.1:0", "--page-size", "1_0"}, `usage: --page-size "1_0": ` + digits},
		{[]string{"campaign", "create", "--tenant", "alien-desert", "--chunk-size", "0o7", "--allow-partial", "c", "-"}, `usage: --chunk-size "0o7": ` + digits},
		{[]string{"campaign", "check", "--max-listed", "2147483648", "c"}, `usage: --max-listed "2147483648": ` + int4},
		{[]string{"campaign", "check", "--max-listed", "-2147483649", "c"}, `usage: --max-listed "-2147483649": ` + int4},
		{[]string{"campaign", "create", "--tenant", "alien-desert", "--chunk-size", "1", "--queue-window", "4294967296", "--allow-partial", "c", "-"},
			`usage: --queue-window "4294967296": ` + int4},
		{[]string{"pause", "--after", "2147483648", j.ID}, `usage: --after "2147483648": ` + int4},
		{[]string{"drain", "--max-chunks", "99999999999999999999", j.ID}, `usage: --max-chunks "99999999999999999999": ` + int4},
	} {
		wantFailure(t, l.Chunks(t, c.args...), 2, c.part)
	}
	wantFailure(t, clitest.Run(t, "manifest", "--job-id", "m", "--tenant", "t", "--chunk-size", "010", "--allow-partial", "-"), 2,
		`usage: --chunk-size "010": `+digits)
	j.wantState(t, 0)
	// Plain decimal is read as before: the canary pauses after 10 chunks, a drain of 3 calls runs 3.
	wantJSON(t, l.Chunks(t, "pause", "--json", "--after", "10", j.ID), map[string]any{"job_id": j.ID, "changed": true, "after": float64(10)})
	wantJSON(t, l.Chunks(t, "drain", "--json", "--max-chunks", "3", j.ID),
		driver.DrainResult{Calls: 3, Processed: j.ids(0, 6), NextIndex: 6, Done: false})
	j.wantState(t, 6)
}

// TestUndoWording: run and drain of an undo say that they restored its
// orders to pending, not that they cancelled them.
func TestUndoWording(t *testing.T) {
	t.Parallel()
	u := seedUndo(t, newLab(t), 30, 4)
	n := len(u.Targets)
	want := fmt.Sprintf("job festival-undo: restored %s to pending; next_index 4\n", spaced(u.ids(0, 4)))
	if out := wantOK(t, u.lab.Chunks(t, "run", u.ID)); out != want {
		t.Fatalf("run of an undo:\n got %q\nwant %q", out, want)
	}
	calls := (n - 4 + 3) / 4
	want = fmt.Sprintf("job festival-undo: %d calls restored %s to pending; next_index %d; the job is done\n", calls, spaced(u.ids(4, n)), n)
	if out := wantOK(t, u.lab.Chunks(t, "drain", u.ID)); out != want {
		t.Fatalf("drain of an undo:\n got %q\nwant %q", out, want)
	}
	u.wantState(t, n)
}
