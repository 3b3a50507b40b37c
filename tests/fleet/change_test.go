package fleet

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// shopPayments makes a schema of the test's own, dropped when the test
// ends, with the table payments(payment_id, status, lock_version) holding
// the rows 1 to n, captured at lock_version 0, for declared changes. It
// returns the schema's name.
func (l *lab) shopPayments(t testing.TB, n int) string {
	t.Helper()
	return l.UserSchema(t, `create table %[1]s.payments(payment_id bigint primary key, status text not null, lock_version integer not null);
	  insert into %[1]s.payments select g, 'captured', 0 from generate_series(1, `+strconv.Itoa(n)+`) g`)
}

// registerPayments registers the job jobID of the declared change on
// shopPayments' table: the payments ids at lock_version 0, one per chunk.
func (l *lab) registerPayments(t testing.TB, change, jobID string, ids ...int) {
	t.Helper()
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf(`{"payment_id": %d, "lock_version": 0}`, id)
	}
	l.Exec(t, "select register_change($1, $2)", change, fmt.Sprintf(`{"job_id": %q, "tenant": "t", "chunk_size": 1, "allow_partial": true, "targets": [%s]}`,
		jobID, strings.Join(parts, ", ")))
}

// The status page and the metrics show a job's declared change (issue 25,
// "Status"): the page's kind cell, in the HTML served and in the rows the
// script adds from api/status; chunks_change_jobs counts each declared
// change's jobs by state, a change without jobs at 0, beside the gauges
// that were there before, unchanged; the undo of a change's job shows as
// "undo of JOB (change NAME)".
func TestStatusPageShowsTheChange(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	shop := l.shopPayments(t, 6)
	for _, name := range []string{"hold", "unused"} {
		l.Exec(t, "select define_change($1)", fmt.Sprintf(`{"name": %q, "table": "%s.payments", "key": "payment_id", "version": "lock_version",
		  "when": {"status": "captured"}, "set": {"status": "on_hold"}}`, name, shop))
	}
	hold := func(jobID string, ids ...int) { l.registerPayments(t, "hold", jobID, ids...) }
	hold("h1", 1, 2)
	hold("h2", 3)
	l.Exec(t, "select run_chunk('h2')")
	newJobs(t, l, "a", 2, 2)

	p := clitest.Start(t, clitest.Options{Name: "serve"}, append(l.Globals(), "serve", "--http", "127.0.0.1:0", "--refresh", "200ms")...)
	base := servedURL(t, p)
	for path, parts := range map[string][]string{
		"":           {`<th>job</th><th>kind</th><th>tenant</th>`, `<td class="kind">change hold</td>`, `<td class="kind">cancel</td>`},
		"api/status": {`"job_id":"h1","tenant":"t"`, `"kind":"change","change":"hold"`, `"kind":"cancel","change":null`, `"kind_text":"change hold"`},
	} {
		if r := fetch(t, "GET", base+path); r.code != 200 || !clitest.ContainsAll(r.body, parts...) {
			t.Errorf("GET /%s: %d, lacks one of %q:\n%s", path, r.code, parts, r.body)
		}
	}
	// The drift of a change's job, as report counts it (issue 35, item 20: it was "?").
	l.Exec(t, "update "+shop+".payments set status = 'refunded' where payment_id = 3")
	if r := fetch(t, "GET", base+"api/status"); r.code != 200 || strings.Count(r.body, `"drift_text":"1"`) != 1 || strings.Contains(r.body, `"drift_text":"?"`) {
		t.Errorf("GET /api/status after payment 3 drifted: %d, want h2's drift 1 and no ?:\n%s", r.code, r.body)
	}
	l.Exec(t, "update "+shop+".payments set status = 'on_hold' where payment_id = 3")
	fams := metrics(t, base+"metrics")
	for _, c := range []struct {
		change, state string
		n             float64
	}{{"hold", "queued", 1}, {"hold", "done", 1}, {"hold", "running", 0}, {"hold", "paused", 0}, {"hold", "idle", 0},
		{"unused", "queued", 0}, {"unused", "done", 0}} {
		if got := sample(t, fams, "chunks_change_jobs", "change", c.change, "state", c.state); got != c.n {
			t.Errorf("chunks_change_jobs{change=%q,state=%q} %v, want %v", c.change, c.state, got, c.n)
		}
	}
	if n := len(fams["chunks_change_jobs"].GetMetric()); n != 14 {
		t.Errorf("chunks_change_jobs has %d series, want 14 (2 changes, 7 states)", n)
	}
	if got := sample(t, fams, "chunks_jobs", "state", "queued"); got != 2 {
		t.Errorf("chunks_jobs{state=queued} %v, want 2", got)
	}

	// The undo of a change's job is kind restore, as an orders job's undo
	// is, with the change's name.
	l.Exec(t, "select register_undo('h2')")
	for path, parts := range map[string][]string{
		"":           {`<td class="kind">undo of h2 (change hold)</td>`},
		"api/status": {`"kind":"restore","change":"hold","undoes":"h2"`, `"kind_text":"undo of h2 (change hold)"`},
	} {
		if r := fetch(t, "GET", base+path); r.code != 200 || !clitest.ContainsAll(r.body, parts...) {
			t.Errorf("GET /%s with the undo: %d, lacks one of %q:\n%s", path, r.code, parts, r.body)
		}
	}

	// In a browser, a job registered after the page loaded gets its row
	// from the template, with its change.
	tab, console := browser(t)
	do(t, tab, "open the page", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="h1"]`)))
	hold("h3", 4)
	do(t, tab, "wait for h3", chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="h3"]`)))
	for job, want := range map[string]string{"a": "cancel", "h1": "change hold", "h3": "change hold", "h2-undo": "undo of h2 (change hold)"} {
		if got := eval[string](t, tab, fmt.Sprintf(`document.querySelector('#jobs tr[data-job=%q] .kind').textContent`, job)); got != want {
			t.Errorf("%s's kind shows %q, want %q", job, got, want)
		}
	}
	if msgs := console(); len(msgs) > 0 {
		t.Errorf("the page's console: %q", msgs)
	}
}
