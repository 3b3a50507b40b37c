package fleet

import (
	"context"
	"math"
	"time"

	"github.com/chunks-dev/chunks/driver"
)

// Overview is the fleet at one moment, as chunks status and the status
// page show it ([LoadOverview]).
type Overview struct {
	Now  time.Time   `json:"now"`  // the server's clock
	Jobs []JobStatus `json:"jobs"` // the jobs asked for, in job id order, each with its ETA
	// More says that jobs follow the last one of Jobs.
	More    bool           `json:"more"`
	Workers []WorkerStatus `json:"workers"` // the live workers
	// Counts is the number of jobs in each state, of all jobs (a state
	// with none is left out).
	Counts map[string]int `json:"counts"`
	// UnfinishedOrders counts the approved orders of all unfinished jobs
	// that are not committed yet.
	UnfinishedOrders int64 `json:"unfinished_orders"`
	// OldestProgressAt is, of all queued and running jobs, the earliest
	// time one was last seen moving forward (or was queued, if never): how
	// long the most neglected job has waited. Nil when there are none.
	OldestProgressAt *time.Time `json:"oldest_progress_at"`
	// Changes has every declared change's name, with the number of its
	// jobs in each state (a state with none is left out).
	Changes map[string]map[string]int `json:"changes"`
	// CampaignsUnfinished counts the campaigns with a job neither done nor
	// abandoned; Campaigns is the ten newest of them.
	CampaignsUnfinished int           `json:"campaigns_unfinished"`
	Campaigns           []CampaignRow `json:"campaigns"`
	// AttentionCount counts the paused jobs that wait for a person (not
	// paused by their campaign's pause); Attention is the ten paused first.
	AttentionCount int         `json:"attention_count"`
	Attention      []PausedJob `json:"attention"`
}

// CampaignRow is an unfinished campaign in [Overview]: its progress, and
// its committed targets sampled over the last 15 minutes.
type CampaignRow struct {
	driver.CampaignProgress
	// Samples are [unix seconds, committed targets], oldest first, as the
	// fleet's heartbeats took them (at most one per 5 s).
	Samples [][2]float64 `json:"samples"`
	Shard   string       `json:"shard,omitempty"` // through a chunks router: the campaign's shard
}

// PausedJob is a paused job that waits for a person, in [Overview].
type PausedJob struct {
	JobID       string    `json:"job_id"`
	Tenant      string    `json:"tenant"`
	Campaign    *string   `json:"campaign"` // nil: not a campaign's job
	PausedAt    time.Time `json:"paused_at"`
	PausedBy    string    `json:"paused_by"`
	PauseReason string    `json:"pause_reason"`
	Shard       string    `json:"shard,omitempty"` // through a chunks router: the job's shard
}

// LoadOverview reads the fleet in one query (SQL status_page), however many jobs
// there are: at most max jobs (0: every job) whose ids follow after (""
// from the first), each with its drift and ETA, the live workers, and for
// all jobs their counts by state and the orders left. It reads only.
func LoadOverview(ctx context.Context, db driver.DB, after string, max int) (*Overview, error) {
	if max < 0 {
		return nil, driver.Invalidf("max: must be 0 (every job) or more, got %d", max)
	}
	var afterArg, maxArg any
	if after != "" {
		afterArg = after
	}
	if max > 0 {
		maxArg = int32(min(max, math.MaxInt32)) // the integer of status_page(text, integer), in any query exec mode
	}
	return look(ctx, db, afterArg, maxArg)
}

// workersOf is the workers that serve shard: all of them on one server
// (shard ""); through a chunks router, only the job's own shard's workers
// can run it.
func workersOf(workers []WorkerStatus, shard string) []WorkerStatus {
	if shard == "" {
		return workers
	}
	var out []WorkerStatus
	for _, w := range workers {
		if w.Shard == shard {
			out = append(out, w)
		}
	}
	return out
}

// Totals is [LoadOverview] without any job: the counts, the orders left, the
// oldest progress and the live workers (for metrics).
func Totals(ctx context.Context, db driver.DB) (*Overview, error) {
	return look(ctx, db, nil, 0)
}

func look(ctx context.Context, db driver.DB, after, max any) (*Overview, error) {
	ov := &Overview{}
	if _, err := driver.QueryJSON(ctx, db, ov, "status_page", after, max); err != nil {
		return nil, err
	}
	if ov.Jobs == nil {
		ov.Jobs = []JobStatus{}
	}
	if ov.Workers == nil {
		ov.Workers = []WorkerStatus{}
	}
	if ov.Campaigns == nil {
		ov.Campaigns = []CampaignRow{}
	}
	if ov.Attention == nil {
		ov.Attention = []PausedJob{}
	}
	for i := range ov.Jobs {
		ov.Jobs[i].ETA = Estimate(ov.Jobs[i], workersOf(ov.Workers, ov.Jobs[i].Shard), ov.Now)
	}
	return ov, nil
}
