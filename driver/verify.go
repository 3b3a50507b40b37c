package driver

import "context"

// Verification is verify_job: the whole proof of one job's record, which
// a chunk of a declared change does not repeat at every chunk
// (docs/contract.md "What verify proves"). Sound is false with Problem in
// report's words when the stored targets are no longer the approval, the
// change is no longer the definition approved, the audit is not exactly
// targets[0:next_index], or the chunks do not run one after another.
type Verification struct {
	JobID     string `json:"job_id"`
	Sound     bool   `json:"sound"`
	Problem   string `json:"problem,omitempty"`
	Targets   int    `json:"targets"`
	ChunkSize int    `json:"chunk_size"`
	NextIndex int    `json:"next_index"`
	Chunks    *int   `json:"chunks"` // committed chunks of a declared change's job; nil for orders
}

// CampaignVerification is verify_campaign: [Verify] of every job of a
// campaign; Unsound lists the jobs that are not, in the campaign's order.
type CampaignVerification struct {
	Name      string       `json:"name"`
	Jobs      int          `json:"jobs"`
	Sound     bool         `json:"sound"`
	Targets   int64        `json:"targets"`
	Committed int64        `json:"committed"`
	Unsound   []UnsoundJob `json:"unsound"`
}

// UnsoundJob is one job of a campaign that [VerifyCampaign] found unsound.
type UnsoundJob struct {
	JobID   string `json:"job_id"`
	Problem string `json:"problem"`
}

// Verify proves job jobID's whole record, read-only (SQL verify_job). An
// unknown job is an [ErrConflict]; an unsound one is not an error: its
// Verification says why.
func Verify(ctx context.Context, db DB, jobID string) (Verification, error) {
	var v Verification
	if err := checkName("job_id", jobID); err != nil {
		return v, err
	}
	_, err := QueryJSON(ctx, db, &v, "verify_job", jobID)
	return v, err
}

// VerifyCampaign proves the record of every job of campaign name,
// read-only (SQL verify_campaign). An unknown campaign is an [ErrConflict].
func VerifyCampaign(ctx context.Context, db DB, name string) (CampaignVerification, error) {
	var v CampaignVerification
	if err := checkName("name", name); err != nil {
		return v, err
	}
	if _, err := QueryJSON(ctx, db, &v, "verify_campaign", name); err != nil {
		return v, err
	}
	v.Unsound = nonNil(v.Unsound)
	return v, nil
}
