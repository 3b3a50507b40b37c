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
}

// JobView is a job: [fleet.JobStatus] and its cells' text.
type JobView struct {
	fleet.JobStatus
	KindText     string `json:"kind_text"`     // see [fleet.JobStatus.KindText]: "cancel", "undo of j1", "change hold_payment"
	ProgressText string `json:"progress_text"` // "20/40"
	Detail       string `json:"detail"`        // see [fleet.JobStatus.Detail]
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
