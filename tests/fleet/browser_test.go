package fleet

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// browserTimeout bounds everything the browser does in a test.
const browserTimeout = 90 * time.Second

// browser starts Debian's chromium, headless, with nothing that reaches
// the network on its own, and returns a tab's context. It stops with the
// test. Messages on the page's console (an exception, a refused resource,
// a Content-Security-Policy violation) are collected: read them with the
// returned func.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	pgtest.RequireTool(t, err, "chromium", "chromium")
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	)
	tab, cancelTab := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	// The first action starts the browser, on a context without a deadline
	// (its deadline would stop the browser); each later one is bounded.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var mu sync.Mutex
	var messages []string
	console := chromedp.Console(tab)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range console {
			if err != nil {
				return // the tab is closing
			}
			mu.Lock()
			messages = append(messages, m.String())
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if err := chromedp.Cancel(tab); err != nil {
			t.Errorf("close chromium: %v", err)
		}
		cancelTab()
		cancelAlloc()
		<-done
	})
	return tab, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(messages)
	}
}

// do runs actions in the tab, bounded; it fails the test on an error.
func do(t *testing.T, tab context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, browserTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
}

// eval is a JavaScript expression's value in the tab.
func eval[T any](t *testing.T, tab context.Context, expression string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, browserTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		t.Fatalf("browser: %s: %v", expression, err)
	}
	return v
}

// The status page in a real browser: it loads and shows every job; a
// progress bar moves after a chunk commits, without a reload; a worker
// shows up with its jobs' rate and ETA as it runs them; a job's report
// opens. Nothing on the page's console: no script error, and the
// Content-Security-Policy refuses nothing of the page's own. A screenshot
// is saved as the test's artifact (go test -artifacts keeps it).
func TestStatusPageInBrowser(t *testing.T) {
	t.Parallel()
	tab, console := browser(t)
	l := newLab(t)
	s := newSeeder(l, 14)
	festival := s.job(t, "festival", 40, 4)
	cleanup := s.job(t, "spring-cleanup", 60, 2) // 30 chunks at 2 a second: long enough to show an ETA however slow the page polls
	bazaar := s.job(t, "lunar-bazaar", 6, 3)
	fair := s.job(t, "comet-fair", 8, 2)
	for _, j := range []job{festival, cleanup, bazaar, fair} {
		l.register(t, j)
	}
	for range 2 {
		l.Exec(t, "select run_chunk('lunar-bazaar')")
	}
	l.Exec(t, "update orders set qty = qty + 1, revision = revision + 1 where id = $1", bazaar.Targets[4].ID) // drifted
	l.Exec(t, "update orders set qty = qty + 1, revision = revision + 1 where id = $1", fair.Targets[3].ID)   // its second chunk conflicts
	// A campaign of 60 orders in chunks of 2, one job: its row and chart.
	l.Exec(t, "insert into orders (id, tenant, qty, state, revision) select g, 'acme', 1, 'pending', 0 from generate_series(50001, 50060) g")
	l.Exec(t, `select campaign_create('rally', 'acme', 2, array(select g from generate_series(50001, 50060) g),
	    array_fill(0, array[60]), array_fill(1, array[60]), 2)`)

	srv := clitest.Start(t, clitest.Options{Name: "serve"}, append(l.Globals(), "serve", "--http", "127.0.0.1:0", "--refresh", "200ms")...)
	base := servedURL(t, srv)
	do(t, tab, "open the page", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="festival"]`)))
	rows := eval[[]string](t, tab, `Array.from(document.querySelectorAll("#jobs tbody tr")).map(tr => tr.dataset.job)`)
	if want := []string{"comet-fair", "festival", "lunar-bazaar", "rally-000001", "spring-cleanup"}; !slices.Equal(rows, want) {
		t.Fatalf("the page shows the jobs %v, want %v", rows, want)
	}
	if got := eval[string](t, tab, `document.querySelector('#jobs tr[data-job="lunar-bazaar"] .drift').textContent`); got != "1" {
		t.Errorf("lunar-bazaar's drift shows %q, want 1", got)
	}

	// A chunk commits: the bar moves, and the page was not reloaded.
	eval[bool](t, tab, `window.sameLoad = true`)
	if _, err := driver.RunChunk(ctx, l.Conn, festival.ID, nil); err != nil {
		t.Fatal(err)
	}
	do(t, tab, "wait for festival's bar at 4/40",
		chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="festival"] progress[value="4"][max="40"]`)))
	if got := eval[string](t, tab, `document.querySelector('#jobs tr[data-job="festival"] .count').textContent`); got != "4/40" {
		t.Errorf("festival's count shows %q after a chunk, want 4/40", got)
	}
	if !eval[bool](t, tab, `window.sameLoad === true`) {
		t.Fatal("the page was reloaded to show the chunk")
	}

	// A worker runs the jobs, two chunks a second each: it shows up, and so do
	// the rates, an ETA and the conflict that paused comet-fair.
	w := l.worker(t, "w1", "--rate", "2", "--poll", "100ms")
	do(t, tab, "wait for the worker, an ETA and the paused job",
		chromedp.WaitVisible(chromedp.CSS(`#workers tr[data-worker="w1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#jobs tr[data-job="spring-cleanup"] td.eta-time`)),
		chromedp.WaitVisible(chromedp.CSS(`#jobs tr.state-paused[data-job="comet-fair"]`)))
	eta := eval[string](t, tab, `document.querySelector('#jobs tr[data-job="spring-cleanup"] .eta').textContent`)
	rate := eval[string](t, tab, `document.querySelector('#jobs tr[data-job="spring-cleanup"] .rate').textContent`)
	if !strings.HasSuffix(eta, "s") || !strings.HasSuffix(rate, "ids/s") {
		t.Errorf("spring-cleanup shows ETA %q at %q, want a time and a rate", eta, rate)
	}
	if got := eval[string](t, tab, `document.querySelector('#jobs tr[data-job="comet-fair"] .detail').textContent`); !strings.Contains(got, "by w1: order") {
		t.Errorf("comet-fair's detail %q does not say that w1 paused it on the conflict", got)
	}
	// Waiting for a person: comet-fair, with why. The campaign's chart
	// draws its rate once the fleet has sampled it twice (every 5 s).
	do(t, tab, "wait for comet-fair to wait for a person, and for rally's chart",
		chromedp.WaitVisible(chromedp.CSS(`#attention tr[data-paused="comet-fair"]`)),
		chromedp.WaitReady(chromedp.CSS(`#campaigns tr[data-campaign="rally"] polyline[points*=","]`)))
	if got := eval[string](t, tab, `document.querySelector('#attention tr[data-paused="comet-fair"] .why').textContent`); !strings.HasPrefix(got, "order ") {
		t.Errorf("comet-fair waits for a person because %q, want its conflict", got)
	}
	if got := eval[string](t, tab, `document.querySelector('#campaigns tr[data-campaign="rally"] .peak').textContent`); !strings.HasPrefix(got, "peak ") || got == "peak 0.0/s" {
		t.Errorf("rally's chart peaks at %q, want a rate", got)
	}
	shot := filepath.Join(t.ArtifactDir(), "status-page.png")
	shotCtx, cancel := context.WithTimeout(tab, browserTimeout)
	png, err := chromedp.Run(shotCtx, chromedp.FullScreenshot(100))
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the status page: %s", shot)
	if !eval[bool](t, tab, `window.sameLoad === true`) {
		t.Fatal("the page was reloaded")
	}
	pgtest.WaitFor(t, 60*time.Second, "festival and spring-cleanup done", func() bool {
		st := l.status(t)
		return st["festival"].State == "done" && st["spring-cleanup"].State == "done"
	})
	do(t, tab, "wait for festival done", chromedp.WaitVisible(chromedp.CSS(`#jobs tr.state-done[data-job="festival"] progress[value="40"]`)))
	stopWorkers(t, w)

	// festival's report opens from its row.
	do(t, tab, "open festival's report",
		chromedp.Click(chromedp.CSS(`#jobs tr[data-job="festival"] td.job a`)),
		chromedp.WaitVisible(chromedp.CSS(`#matching li`)))
	if got := eval[string](t, tab, `document.getElementById("job").textContent`); got != "festival" {
		t.Errorf("the report is of %q", got)
	}
	matching := eval[int](t, tab, `document.querySelectorAll("#matching li").length`)
	want, err := driver.Report(ctx, l.Conn, festival.ID)
	if err != nil {
		t.Fatal(err)
	}
	if matching != len(want.Matching) || matching != 40 {
		t.Errorf("the report lists %d matching ids, want %d", matching, len(want.Matching))
	}
	if msgs := console(); len(msgs) > 0 {
		t.Errorf("the page's console:\n%s", strings.Join(msgs, "\n"))
	}
}
