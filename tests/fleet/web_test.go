package fleet

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	metricsapi "github.com/chunks-dev/chunks/internal/app/metrics"
	"github.com/chunks-dev/chunks/internal/app/web"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// chunks serve --http: every endpoint's status code and content type, the
// headers every answer carries, GET only, escaped output, and the
// database's gauges against the database. No host in the address means
// 127.0.0.1.
func TestServeEndpoints(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	jobs := newJobs(t, l, "a b c", 4, 2)
	l.Exec(t, "select run_chunk('a')")
	l.Exec(t, "select run_chunk('a')")
	l.Exec(t, "select run_chunk('b')")
	l.Exec(t, "update orders set qty = qty + 1, revision = revision + 1 where id = $1", jobs[0].Targets[1].ID)
	evil := `<img src=x onerror=alert(1)>`
	l.heartbeat(t, evil, "idle", nil)

	p := clitest.Start(t, clitest.Options{Name: "serve"}, append(l.Globals(), "serve", "--http", ":0")...)
	base := servedURL(t, p)
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("--http :0 serves on %s, want 127.0.0.1", base)
	}
	for _, c := range []struct {
		method, path string
		code         int
		ctype        string
		has          []string
	}{
		{"GET", "", 200, "text/html", []string{`<tr data-job="a" class="state-done">`, `<progress max="4" value="2">`,
			`href="jobs/a"`, "3 jobs: 2 queued, 1 done · 6 rows to go · 1 live worker",
			"&lt;img src=x onerror=alert(1)&gt;"}},
		{"HEAD", "", 200, "text/html", nil},
		{"GET", "api/status", 200, "application/json", []string{`"job_id":"b"`, `"progress_text":"2/4"`, `"worker_id":"\u003cimg src=x onerror=alert(1)\u003e"`}},
		{"GET", "api/status?after=a", 200, "application/json", []string{`"after":"a"`}},
		{"GET", "jobs/a", 200, "text/html", []string{"Report of", "4 approved, 4 committed, 0 remaining:", "<li>" + fmtID(jobs[0].Targets[1].ID) + "</li>"}},
		{"GET", "api/jobs/a/report", 200, "application/json", []string{`"drifted":[` + fmtID(jobs[0].Targets[1].ID) + `]`}},
		{"GET", "jobs/nope", 404, "text/plain", []string{"no report: conflict: job nope: not found"}},
		{"GET", "api/jobs/nope/report", 404, "text/plain", []string{"job nope: not found"}},
		{"GET", "jobs/bad%20id", 400, "text/plain", []string{"job_id: must be 1 to 64 ASCII letters"}},
		{"GET", "healthz", 200, "text/plain", []string{"ok"}},
		{"GET", "readyz", 200, "text/plain", []string{"ready"}},
		{"GET", "metrics", 200, "text/plain", []string{"chunks_jobs", "go_goroutines", "process_cpu_seconds_total"}},
		{"GET", "static/page.js", 200, "text/javascript", []string{"textContent"}},
		{"GET", "static/page.css", 200, "text/css", nil},
		{"GET", "nope", 404, "text/plain", nil},
		{"POST", "", 405, "text/plain", nil},
		{"PUT", "api/status", 405, "text/plain", nil},
		{"DELETE", "jobs/a", 405, "text/plain", nil},
		{"POST", "metrics", 405, "text/plain", nil},
	} {
		r := fetch(t, c.method, base+c.path)
		if r.code != c.code || !strings.HasPrefix(r.header.Get("Content-Type"), c.ctype) {
			t.Errorf("%s /%s: %d %q, want %d %s\n%s", c.method, c.path, r.code, r.header.Get("Content-Type"), c.code, c.ctype, r.body)
			continue
		}
		csp := r.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") ||
			r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s /%s: headers %v", c.method, c.path, r.header)
		}
		for _, part := range c.has {
			if !strings.Contains(r.body, part) {
				t.Errorf("%s /%s lacks %q:\n%s", c.method, c.path, part, r.body)
			}
		}
		if strings.Contains(r.body, evil) {
			t.Errorf("%s /%s holds the worker id unescaped:\n%s", c.method, c.path, r.body)
		}
		if c.code == 405 && !strings.Contains(r.header.Get("Allow"), "GET") {
			t.Errorf("%s /%s: Allow %q", c.method, c.path, r.header.Get("Allow"))
		}
	}
	// The JSON report is driver.Report's.
	want, err := driver.Report(ctx, l.Conn, "a")
	if err != nil {
		t.Fatal(err)
	}
	var got driver.JobReport
	if err := json.Unmarshal([]byte(fetch(t, "GET", base+"api/jobs/a/report").body), &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("report %+v (%v), want %+v", got, err, want)
	}

	// The database's gauges, against the database.
	fams := metrics(t, base+"metrics")
	for state, n := range map[string]int{"done": 1, "queued": 2, "running": 0, "paused": 0, "idle": 0} {
		if got := sample(t, fams, "chunks_jobs", "state", state); got != float64(n) {
			t.Errorf("chunks_jobs{state=%q} %v, want %d", state, got, n)
		}
	}
	left := pgtest.MustInt(t, l.Conn, "select sum(targets - next_index) from job_shapes")
	if got := sample(t, fams, "chunks_unfinished_orders"); got != float64(left) || left != 6 {
		t.Errorf("chunks_unfinished_orders %v, want %d", got, left)
	}
	if got := sample(t, fams, "chunks_live_workers", "state", "idle"); got != 1 {
		t.Errorf("chunks_live_workers{state=idle} %v, want 1", got)
	}
	if got := sample(t, fams, "chunks_database_up"); got != 1 {
		t.Errorf("chunks_database_up %v", got)
	}
	// b and c never moved as a worker saw it: they count from when they
	// were queued, at registration.
	quiet := pgtest.MustString(t, l.Conn, "select (extract(epoch from now() - min(visible_at)) >= 0)::text from job_queue where job_id in ('b', 'c')")
	if got := sample(t, fams, "chunks_longest_no_progress_seconds"); got <= 0 || quiet != "true" {
		t.Errorf("chunks_longest_no_progress_seconds %v", got)
	}

	p.Signal(t, syscall.SIGTERM)
	if r := p.WaitWithin(t, 20*time.Second); r.Code != 0 || !strings.Contains(r.Stderr, "msg=stopped") {
		t.Fatalf("serve after SIGTERM: %v", r)
	}
}

func fmtID(id int64) string { b, _ := json.Marshal(id); return string(b) }

// chunks serve on a schema without chunks: /readyz and the page say 503
// and why (a fixed reason: the log has the error), /healthz is 200;
// another address than loopback is served with a warning, whatever the
// Host; a bad address or page size is a usage error.
func TestServeNotReadyAndAddresses(t *testing.T) {
	t.Parallel()
	nowhere := clitest.Start(t, clitest.Options{Name: "serve nowhere"}, "--dsn", pgtest.DSN(), "--schema", "nowhere", "serve", "--http", "127.0.0.1:0")
	base := servedURL(t, nowhere)
	nowhere.WaitLine(t, 0, 10*time.Second, "level=WARN", "cannot show the fleet yet", "run chunks migrate")
	const why = "chunks is not installed, is older than this binary, or this role lacks access (details in the chunks log)\n"
	for _, c := range []struct {
		path string
		code int
		body string
	}{
		{"readyz", 503, "not ready: " + why},
		{"", 503, "could not read the fleet: " + why},
		{"api/status", 503, "could not read the fleet: " + why},
		{"healthz", 200, "ok\n"},
	} {
		if r := fetch(t, "GET", base+c.path); r.code != c.code || r.body != c.body {
			t.Errorf("GET /%s on a schema without chunks: %d %q, want %d %q", c.path, r.code, r.body, c.code, c.body)
		}
	}
	fams := metrics(t, base+"metrics")
	if got := sample(t, fams, "chunks_database_up"); got != 0 {
		t.Errorf("chunks_database_up %v without chunks, want 0", got)
	}
	if _, ok := fams["chunks_jobs"]; ok {
		t.Errorf("chunks_jobs without chunks")
	}

	l := newLab(t)
	open := clitest.Start(t, clitest.Options{Name: "serve everywhere"}, append(l.Globals(), "serve", "--http", "0.0.0.0:0")...)
	url := servedURL(t, open)
	open.WaitLine(t, 0, 5*time.Second, "level=WARN", "not loopback", "anyone who can reach it")
	port := url[strings.LastIndex(url, ":"):]
	for _, host := range []string{"", "dash.internal" + port, "evil.example"} {
		if r := fetchAs(t, "GET", "http://127.0.0.1"+port+"readyz", host); r.code != 200 {
			t.Errorf("serving on 0.0.0.0, Host %q: %d %s", host, r.code, r.body)
		}
	}

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"serve", "--http", "nonsense"}, `chunks: invalid: http: address "nonsense": address nonsense: missing port in address`},
		{[]string{"serve", "--http", ":0", "--page-size", "0"}, "chunks: invalid: page-size: must be between 1 and 1000, got 0"},
		{[]string{"serve", "--http", ":0", "--refresh", "1ms"}, "chunks: invalid: refresh: must be between 100ms and 1m0s, got 1ms"},
		{[]string{"worker", "--http", "nonsense"}, `chunks: invalid: http: address "nonsense"`},
		{[]string{"serve"}, "chunks: usage: serve needs --http ADDR, e.g. --http 127.0.0.1:8080"},
		{[]string{"serve", "--http", ":0", "extra"}, `chunks: usage: serve takes no arguments, got ["extra"]`},
	} {
		if r := l.Chunks(t, c.args...); r.Code != 2 || !strings.Contains(r.Stderr, c.msg) {
			t.Errorf("chunks %v: want exit 2 and %q, got %v", c.args, c.msg, r)
		}
	}
	stopWorkers(t, nowhere, open)
}

// However many jobs there are, a page, its refresh and a scrape are one
// query each (one round trip on the wire), and the page lists at most
// PageSize jobs, with a link to the next ones.
func TestStatusPageOneQueryPerRefresh(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := newSeeder(l, 23)
	var ids []string
	for i := range 150 {
		j := s.job(t, fmt.Sprintf("job-%03d", i), 2, 1)
		l.register(t, j)
		ids = append(ids, j.ID)
	}
	conn, counter := pgtest.CountingConnect(t, l.DSN)
	reg := metricsapi.NewRegistry()
	reg.MustRegister(&metricsapi.Database{DB: conn})
	srv := httptest.NewServer((&web.Server{DB: conn, Title: l.Name, Metrics: reg}).Handler())
	t.Cleanup(srv.Close)

	for _, path := range []string{"/", "/api/status", "/metrics"} {
		fetch(t, "GET", srv.URL+path) // pgx prepares each statement once, on its first use
	}
	counter.Take()
	var first, second struct {
		Jobs []struct {
			JobID string `json:"job_id"`
		} `json:"jobs"`
		Next string `json:"next"`
	}
	for _, c := range []struct {
		path string
		into any
	}{{"/", nil}, {"/api/status", &first}, {"/api/status?after=" + ids[web.DefaultPageSize-1], &second}, {"/metrics", nil}} {
		r := fetch(t, "GET", srv.URL+c.path)
		if r.code != 200 {
			t.Fatalf("GET %s: %d %s", c.path, r.code, r.body)
		}
		if trips := counter.Take(); trips != 1 {
			t.Errorf("GET %s: %d round trips, want 1", c.path, trips)
		}
		if c.into != nil {
			if err := json.Unmarshal([]byte(r.body), c.into); err != nil {
				t.Fatal(err)
			}
		}
		if c.path == "/" && (strings.Count(r.body, "<tr data-job=") != web.DefaultPageSize+1 || // the script's blank row too
			!strings.Contains(r.body, `href="?after=`+ids[web.DefaultPageSize-1]+`"`)) {
			t.Errorf("GET /: %d job rows, and the next page's link?", strings.Count(r.body, "<tr data-job="))
		}
	}
	if len(first.Jobs) != web.DefaultPageSize || first.Jobs[0].JobID != ids[0] || first.Next != ids[web.DefaultPageSize-1] {
		t.Errorf("first page: %d jobs from %s, next %q", len(first.Jobs), first.Jobs[0].JobID, first.Next)
	}
	if len(second.Jobs) != 150-web.DefaultPageSize || second.Jobs[0].JobID != ids[web.DefaultPageSize] || second.Next != "" {
		t.Errorf("second page: %d jobs, next %q", len(second.Jobs), second.Next)
	}
}
