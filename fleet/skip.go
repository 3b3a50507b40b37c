package fleet

import (
	"context"
	"time"

	"github.com/chunks-dev/chunks/driver"
)

// Skipped is what [Skip] answers (SQL skip_target).
type Skipped struct {
	JobID   string     `json:"job_id"`
	Key     driver.Key `json:"key"`
	Skipped bool       `json:"skipped"` // false: it already was, and nothing changed
	By      string     `json:"by"`      // the session_user that skipped it
	At      time.Time  `json:"at"`
	Reason  string     `json:"reason"`
	// Found is what the change's check said of the row when it was
	// skipped; "" when the row matched.
	Found string `json:"found"`
	// Paused is whether the job is paused: a skip does not resume it
	// ([Resume] does).
	Paused bool `json:"paused"`
	// Proposal is set when the job is two-person: the skip was proposed
	// instead of done (Skipped false; By, At, Reason and Found empty), and is
	// done when another role approves it ([driver.Approve] with its Digest).
	*Proposal
}

// CheckSkipReason checks a skip's reason as the server does, before any
// connection.
func CheckSkipReason(reason string) error { return checkReason(reason, "the target is skipped") }

// Skip sets one target of a declared change's job aside, for reason: the
// job never changes it. key is the target's key: its value (a
// [driver.TextKey] of the text typed is fine for any one-column key) or an
// object of a composite key's columns. The decision is recorded with who,
// when, and what the change's check says of the row now; the chunk that
// holds the target, and every later one, pass over it; report lists it as
// skipped. The approval is not changed, and neither is the queue: a paused
// job stays paused. A committed target, a key that is no target of the job,
// a job of orders, or an unknown, finished or abandoned job is an
// [driver.ErrConflict]; skipping a skipped target changes nothing.
func Skip(ctx context.Context, db driver.DB, job driver.JobRef, key driver.Key, reason string) (Skipped, error) {
	if err := CheckSkipReason(reason); err != nil {
		return Skipped{}, err
	}
	if err := job.Validate(); err != nil {
		return Skipped{}, err
	}
	raw, err := key.MarshalJSON()
	if err != nil {
		return Skipped{}, err
	}
	if string(raw) == "null" {
		return Skipped{}, driver.Invalidf("key: must be the target's key (its value, or an object of a composite key's columns), got none")
	}
	var s Skipped
	if _, err := driver.QueryJSON(ctx, db, &s, "skip_target", job.Args(string(raw), reason)...); err != nil {
		return Skipped{}, err
	}
	return s, nil
}

// CampaignSkip is what [SkipMismatched] did (SQL campaign_skip).
type CampaignSkip struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
	// Skipped is each target set aside, with its job and what the check
	// said of its row.
	Skipped []struct {
		JobID string     `json:"job_id"`
		Key   driver.Key `json:"key"`
		Found string     `json:"found"`
	} `json:"skipped"`
	// Resumed is the jobs queued again (none while the campaign itself is
	// paused: CampaignPaused).
	Resumed        []string `json:"resumed"`
	CampaignPaused bool     `json:"campaign_paused"`
}

// SkipMismatched sets aside, for reason, every target of the campaign's
// paused jobs whose row does not match now (as [driver.CheckCampaign]
// judges), each recorded as [Skip] records one, then queues those jobs
// again, unless the campaign itself is paused. A campaign of orders is an
// [driver.ErrConflict].
func SkipMismatched(ctx context.Context, db driver.DB, campaign, reason string) (CampaignSkip, error) {
	if err := checkReason(reason, "the targets are skipped"); err != nil {
		return CampaignSkip{}, err
	}
	if err := driver.CheckCampaignName(campaign); err != nil {
		return CampaignSkip{}, err
	}
	var c CampaignSkip
	if _, err := driver.QueryJSON(ctx, db, &c, "campaign_skip", campaign, reason); err != nil {
		return CampaignSkip{}, err
	}
	return c, nil
}
