package web

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
)

// newView computes every cell's text from the overview: progress, drift
// ("?" when the stored job cannot be read), rate ("—" when not known),
// ETA, the bar's maximum (at least 1), the next page's key (only when
// more jobs follow), and each worker's state, uptime and last heartbeat
// (never "ago" in the future, whatever the clocks say).
func TestNewView(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	drift, rate, eta := 2, 2.5, 200.0
	reason := "replica lag 3s > 1s"
	ov := &fleet.Overview{
		Now: now,
		Jobs: []fleet.JobStatus{
			{JobID: "empty", N: 0, State: fleet.StateDone, ETA: fleet.ETA{Kind: fleet.ETADone}},
			{JobID: "festival", NextIndex: 20, N: 40, State: fleet.StateQueued, Drift: &drift, Rate: &rate,
				ETA: fleet.ETA{Kind: fleet.ETATime, Seconds: &eta}},
		},
		More: true,
		Workers: []fleet.WorkerStatus{
			{WorkerID: "w1", State: "throttled", Reason: &reason, StartedAt: now.Add(-(2*time.Hour + 5*time.Minute)), LastSeen: now.Add(-3 * time.Second)},
			{WorkerID: "w2", State: "idle", StartedAt: now.Add(-42 * time.Second), LastSeen: now.Add(2 * time.Second)}, // its clock is ahead
		},
		Counts:           map[string]int{fleet.StateQueued: 1, fleet.StateDone: 1},
		UnfinishedOrders: 20,
	}
	v := newView("lab", ov, "aaa")
	type cells struct{ Progress, Drift, Rate, ETA string }
	var jobs []cells
	var bars []int
	for _, j := range v.Jobs {
		jobs = append(jobs, cells{j.ProgressText, j.DriftText, j.RateText, j.ETAText})
		bars = append(bars, j.Bar)
	}
	if want := []cells{{"0/0", "?", "—", fleet.ETA{Kind: fleet.ETADone}.String()}, {"20/40", "2", "2.5 ids/s", "3m 20s"}}; !reflect.DeepEqual(jobs, want) {
		t.Errorf("job cells\n got %+v\nwant %+v", jobs, want)
	}
	if !reflect.DeepEqual(bars, []int{1, 40}) {
		t.Errorf("bars %v, want [1 40]", bars)
	}
	type workerCells struct{ State, Up, Seen string }
	var workers []workerCells
	for _, w := range v.Workers {
		workers = append(workers, workerCells{w.StateText, w.Up, w.Seen})
	}
	if want := []workerCells{{"throttled: replica lag 3s > 1s", "2h 05m", "3s ago"}, {"idle", "42s", "<1s ago"}}; !reflect.DeepEqual(workers, want) {
		t.Errorf("worker cells\n got %+v\nwant %+v", workers, want)
	}
	if v.Title != "lab" || v.After != "aaa" || v.Next != "festival" || !v.Now.Equal(now) || v.Updated != now.Local().Format("15:04:05") {
		t.Errorf("view %q after %q next %q now %v updated %q", v.Title, v.After, v.Next, v.Now, v.Updated)
	}
	if want := "2 jobs: 1 queued, 1 done · 20 rows to go · 2 live workers"; v.Summary != want {
		t.Errorf("summary %q, want %q", v.Summary, want)
	}

	ov.More = false
	if v := newView("lab", ov, ""); v.Next != "" {
		t.Errorf("the last page links to a next one after %q", v.Next)
	}
	ov.More, ov.Jobs = true, nil
	if v := newView("lab", ov, "zzz"); v.Next != "" || v.Jobs == nil || len(v.Jobs) != 0 {
		t.Errorf("an empty page after zzz: next %q, jobs %#v (want none, as [] in JSON)", v.Next, v.Jobs)
	}
}

// The summary counts in the page's state order, says "1 job" but "2 jobs"
// and "0 jobs", and leaves out the states with no job.
func TestSummary(t *testing.T) {
	for _, c := range []struct {
		ov   fleet.Overview
		want string
	}{
		{fleet.Overview{}, "0 jobs · 0 rows to go · 0 live workers"},
		{fleet.Overview{Counts: map[string]int{fleet.StateRunning: 1}, UnfinishedOrders: 1, Workers: make([]fleet.WorkerStatus, 1)},
			"1 job: 1 running · 1 row to go · 1 live worker"},
		{fleet.Overview{Counts: map[string]int{fleet.StateDone: 8, fleet.StateQueued: 3, fleet.StateRunning: 1, fleet.StatePaused: 0, fleet.StateIdle: 2},
			UnfinishedOrders: 120, Workers: make([]fleet.WorkerStatus, 2)},
			"14 jobs: 3 queued, 1 running, 8 done, 2 idle · 120 rows to go · 2 live workers"},
	} {
		if got := summary(&c.ov); got != c.want {
			t.Errorf("summary(%+v) = %q, want %q", c.ov, got, c.want)
		}
	}
}

// The status page escapes every text that comes from the database: a
// tenant, a pause reason, a worker's host and the title are text, never
// markup, in the page and in the rows its script copies.
func TestPageEscapes(t *testing.T) {
	now := time.Now()
	evil := `<script>alert("x")</script>`
	reason := evil
	ov := &fleet.Overview{
		Now:     now,
		Jobs:    []fleet.JobStatus{{JobID: "j1", Tenant: evil, N: 1, State: fleet.StatePaused, PausedAt: &now, PausedBy: &reason, PauseReason: &reason}},
		Workers: []fleet.WorkerStatus{{WorkerID: "w1", Host: evil, State: "throttled", Reason: &reason, StartedAt: now, LastSeen: now}},
		Counts:  map[string]int{fleet.StatePaused: 1},
	}
	var page strings.Builder
	if err := pages.ExecuteTemplate(&page, "page.html", pageData{View: newView(evil, ov, ""), RefreshMs: 1000}); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if strings.Contains(html, "<script>alert") {
		t.Fatalf("the page holds the database's text as markup:\n%s", html)
	}
	escaped := `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`
	// The title (twice), the tenant, the pause detail, the host and the worker's state.
	if n := strings.Count(html, escaped); n < 6 {
		t.Fatalf("the text shows escaped %d times, want at least 6:\n%s", n, html)
	}
}

// A campaign's chart: its rate between each two samples, placed on 15
// minutes up to now (older ones at the left edge) and scaled to the peak
// (the top of the box less 2 units); a stall shows as the line at the
// bottom. The text cells say the state and the ETA in words, and how
// many campaigns and paused jobs are not listed.
func TestNewViewCampaigns(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) float64 { return float64(now.Add(-ago).Unix()) }
	rate := 100.0
	campaign := "spring"
	ov := &fleet.Overview{
		Now:                 now,
		CampaignsUnfinished: 3,
		Campaigns: []fleet.CampaignRow{{
			CampaignProgress: driver.CampaignProgress{Name: "spring", Targets: 1000, Committed: 400, Remaining: 600, JobsRunning: 1, RatePerSecond: &rate},
			Samples:          [][2]float64{{at(20 * time.Minute), 0}, {at(15 * time.Minute), 100}, {at(7*time.Minute + 30*time.Second), 400}, {at(0), 400}},
		}},
		AttentionCount: 4,
		Attention:      []fleet.PausedJob{{JobID: "spring-000002", Campaign: &campaign, PausedAt: now.Add(-90 * time.Second), PausedBy: "w1", PauseReason: "id 7: missing"}},
	}
	v := newView("lab", ov, "")
	c := v.Campaigns[0]
	// rates: 100 in 300 s at the left edge, 300 in 450 s (the peak) mid-way, 0 at now.
	if c.Points != "0.0,13.0 60.0,2.0 120.0,24.0" || c.PeakText != "peak 0.7/s" || c.StateText != "running" ||
		c.ProgressText != "400/1000" || c.RateText != "100.0/s" || c.ETAText != "unknown" || c.Bar != 1000 {
		t.Errorf("campaign view: %+v", c)
	}
	if v.CampaignsHidden != 2 || v.AttentionHidden != 3 || v.Attention[0].CampaignText != "spring" || v.Attention[0].Since != "1m 30s ago" {
		t.Errorf("hidden %d, %d; attention %+v", v.CampaignsHidden, v.AttentionHidden, v.Attention)
	}
}
