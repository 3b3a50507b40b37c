package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/chunks-dev/chunks/driver"
)

// Archived is what [Archive] answers (SQL archive_jobs).
type Archived struct {
	Archived int      `json:"archived"` // jobs archived now
	Jobs     []string `json:"jobs"`     // the first 100 of them, by id
	More     bool     `json:"more"`     // more than 100 were
}

// Archive puts away every job that ended (finished, or [Abandon]ed) more
// than finishedBefore ago and is not archived yet: it leaves the default
// status, the status page and the metrics' counts, and its record stays
// (report, inspect, verify and undo still answer for it). A job's end is
// its last recorded chunk, its abandon, or (a job of orders run outside
// the fleet keeps no time per chunk) its registration.
func Archive(ctx context.Context, db driver.DB, finishedBefore time.Duration) (Archived, error) {
	if finishedBefore < 0 {
		return Archived{}, driver.Invalidf("finished-before: must be 0 or more, got %s", finishedBefore)
	}
	var a Archived
	if _, err := driver.QueryJSON(ctx, db, &a, "archive_jobs", fmt.Sprintf("%d microseconds", finishedBefore.Microseconds())); err != nil {
		return Archived{}, err
	}
	return a, nil
}

// CampaignArchived is what [ArchiveCampaign] answers (SQL campaign_archive).
type CampaignArchived struct {
	Name     string `json:"name"`
	Archived int    `json:"archived"` // jobs archived now (0: all already were)
}

// ArchiveCampaign archives every job of the campaign, which must all have
// ended (finished or abandoned; otherwise an [driver.ErrConflict]).
// campaign status and report still answer for it.
func ArchiveCampaign(ctx context.Context, db driver.DB, name string) (CampaignArchived, error) {
	if err := driver.CheckCampaignName(name); err != nil {
		return CampaignArchived{}, err
	}
	var a CampaignArchived
	if _, err := driver.QueryJSON(ctx, db, &a, "campaign_archive", name); err != nil {
		return CampaignArchived{}, err
	}
	return a, nil
}
