package web

import (
	"fmt"
	"strings"
	"time"

	"github.com/chunks-dev/chunks/fleet"
)

// View is one look at the fleet as the page shows it: the raw figures and
// the text of each cell, computed once in Go for the HTML the server
// renders and for the JSON the page's script polls (GET /api/status).
type View struct {
	Title   string       `json:"title"`   // what the page is of: the schema
	Now     time.Time    `json:"now"`     // the server's clock at the look
	Updated string       `json:"updated"` // Now as the page shows it
	Summary string       `json:"summary"` // one line over every job and worker
	Jobs    []JobView    `json:"jobs"`    // this page's jobs, in job id order
	Workers []WorkerView `json:"workers"` // the live workers
	After   string       `json:"after"`   // this page lists the jobs after this id ("" from the first)
	Next    string       `json:"next"`    // the next page lists the jobs after this id ("" when this is the last)
	// Campaigns is the newest unfinished campaigns, each with its rate over
	// the last 15 minutes as a chart; CampaignsHidden, how many more there are.
	Campaigns       []CampaignView `json:"campaigns"`
	CampaignsHidden int            `json:"campaigns_hidden"`
	// Attention is the paused jobs that wait longest for a person;
	// AttentionHidden, how many more there are.
	Attention       []PausedView `json:"attention"`
	AttentionHidden int          `json:"attention_hidden"`
}

// CampaignView is an unfinished campaign: [fleet.CampaignRow] and its
// cells' text, with its chart.
type CampaignView struct {
	fleet.CampaignRow
	StateText    string `json:"state_text"`    // see [fleet.CampaignState]
	ProgressText string `json:"progress_text"` // "4000/100000"
	RateText     string `json:"rate_text"`     // over about the last minute: "5050.0/s", or "unknown"
	ETAText      string `json:"eta_text"`      // see [fleet.CampaignETA]
	Bar          int    `json:"bar"`           // the progress bar's maximum: its targets, at least 1
	// Points is the chart's polyline in a chartWidth x chartHeight box:
	// its rate between each two samples of the last 15 minutes, scaled
	// to PeakText, the highest.
	Points   string `json:"points"`
	PeakText string `json:"peak_text"`
}

// PausedView is a paused job that waits for a person: [fleet.PausedJob]
// and its cells' text.
type PausedView struct {
	fleet.PausedJob
	CampaignText string `json:"campaign_text"` // its campaign, or "—"
	Since        string `json:"since"`         // how long ago it was paused
}

// chartWidth and chartHeight are the box of a campaign's chart: 15
// minutes across, 0 to the peak rate up.
const (
	chartWidth  = 120
	chartHeight = 24
	chartWindow = 15 * time.Minute
)

// ratePoints is the polyline of samples' rate over the chart's window up
// to now (see [CampaignView].Points), and the peak it is scaled to.
func ratePoints(samples [][2]float64, now time.Time) (points string, peak float64) {
	type point struct{ at, rate float64 }
	var rates []point
	for i := 1; i < len(samples); i++ {
		if dt := samples[i][0] - samples[i-1][0]; dt > 0 {
			r := max((samples[i][1]-samples[i-1][1])/dt, 0)
			rates = append(rates, point{samples[i][0], r})
			peak = max(peak, r)
		}
	}
	start := float64(now.Add(-chartWindow).UnixMilli()) / 1000
	var b strings.Builder
	for i, p := range rates {
		x := min(max((p.at-start)/chartWindow.Seconds(), 0), 1) * chartWidth
		y := float64(chartHeight)
		if peak > 0 {
			y = chartHeight - p.rate/peak*(chartHeight-2)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x, y)
	}
	return b.String(), peak
}

// JobView is a job: [fleet.JobStatus] and its cells' text.
type JobView struct {
	fleet.JobStatus
	KindText     string `json:"kind_text"`     // see [fleet.JobStatus.KindText]: "cancel", "undo of j1", "change hold_payment"
	ProgressText string `json:"progress_text"` // "20/40"
	Detail       string `json:"detail"`        // see [fleet.JobStatus.Detail], then [fleet.JobStatus.ApprovalText]
	DriftText    string `json:"drift_text"`    // the drift count, or "?" when the stored job cannot be read
	RateText     string `json:"rate_text"`     // "2.5 ids/s", or "—"
	ETAText      string `json:"eta_text"`      // see [fleet.ETA.String]
	Bar          int    `json:"bar"`           // the progress bar's maximum: n, at least 1
}

// WorkerView is a live worker: [fleet.WorkerStatus] and its cells' text.
type WorkerView struct {
	fleet.WorkerStatus
	Up        string `json:"up"`         // how long it has run
	Seen      string `json:"seen"`       // how long ago its last heartbeat was
	StateText string `json:"state_text"` // its state, with the reason when throttled
}

func newView(title string, ov *fleet.Overview, after string) View {
	v := View{Title: title, Now: ov.Now, Updated: ov.Now.Local().Format("15:04:05"), After: after,
		Jobs: make([]JobView, 0, len(ov.Jobs)), Workers: make([]WorkerView, 0, len(ov.Workers))}
	for _, j := range ov.Jobs {
		jv := JobView{JobStatus: j, KindText: j.KindText(), ProgressText: fmt.Sprintf("%d/%d", j.NextIndex, j.N), Detail: j.Detail(ov.Now),
			DriftText: "?", RateText: fleet.Rate(j.Rate), ETAText: j.ETA.String(), Bar: max(j.N, 1)}
		if a := j.ApprovalText(); a != "" { // two people: who proposed and approved it
			jv.Detail = strings.TrimPrefix(jv.Detail+"; "+a, "; ")
		}
		if j.Drift != nil {
			jv.DriftText = fmt.Sprint(*j.Drift)
		}
		if jv.RateText == "" {
			jv.RateText = "—"
		}
		v.Jobs = append(v.Jobs, jv)
	}
	if ov.More && len(ov.Jobs) > 0 {
		v.Next = ov.Jobs[len(ov.Jobs)-1].JobID
	}
	for _, w := range ov.Workers {
		st := w.State
		if w.Reason != nil {
			st += ": " + *w.Reason
		}
		v.Workers = append(v.Workers, WorkerView{WorkerStatus: w, StateText: st,
			Up:   fleet.Duration(ov.Now.Sub(w.StartedAt).Seconds()),
			Seen: fleet.Duration(max(ov.Now.Sub(w.LastSeen).Seconds(), 0)) + " ago"})
	}
	v.Campaigns = make([]CampaignView, 0, len(ov.Campaigns))
	for _, c := range ov.Campaigns {
		cv := CampaignView{CampaignRow: c, StateText: fleet.CampaignState(c.CampaignProgress),
			ProgressText: fmt.Sprintf("%d/%d", c.Committed, c.Targets), RateText: "unknown",
			ETAText: fleet.CampaignETA(c.CampaignProgress), Bar: max(c.Targets, 1)}
		if c.RatePerSecond != nil {
			cv.RateText = fmt.Sprintf("%.1f/s", *c.RatePerSecond)
		}
		var peak float64
		cv.Points, peak = ratePoints(c.Samples, ov.Now)
		cv.PeakText = fmt.Sprintf("peak %.1f/s", peak)
		v.Campaigns = append(v.Campaigns, cv)
	}
	v.CampaignsHidden = max(ov.CampaignsUnfinished-len(ov.Campaigns), 0)
	v.Attention = make([]PausedView, 0, len(ov.Attention))
	for _, j := range ov.Attention {
		pv := PausedView{PausedJob: j, CampaignText: "—", Since: fleet.Duration(max(ov.Now.Sub(j.PausedAt).Seconds(), 0)) + " ago"}
		if j.Campaign != nil {
			pv.CampaignText = *j.Campaign
		}
		v.Attention = append(v.Attention, pv)
	}
	v.AttentionHidden = max(ov.AttentionCount-len(ov.Attention), 0)
	v.Summary = summary(ov)
	return v
}

// summary is the line over the whole fleet: "12 jobs: 3 queued, 1 running,
// 8 done · 120 rows to go · 2 live workers".
func summary(ov *fleet.Overview) string {
	total := 0
	var parts []string
	for _, s := range fleet.States {
		if n := ov.Counts[s]; n > 0 {
			total += n
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	jobs := plural(total, "job")
	if len(parts) > 0 {
		jobs += ": " + strings.Join(parts, ", ")
	}
	return fmt.Sprintf("%s · %s to go · %s", jobs, plural(int(ov.UnfinishedOrders), "row"), plural(len(ov.Workers), "live worker"))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
