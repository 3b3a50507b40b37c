package driver

import (
	"context"
	"encoding/json"
	"regexp"
	"time"
)

// Two people (docs/safety.md "Two people"): under a two-person policy a
// plan registered by one role is proposed, and runs only once another role
// approves exactly its digest.

// Policy is one row of the approval policy ([SetPolicy]).
type Policy struct {
	// Change is the declared change the row is for; nil: the whole schema
	// (every job, orders included). A change's row wins over the schema's.
	Change    *string   `json:"change"`
	TwoPerson bool      `json:"two_person"`
	SetBy     string    `json:"set_by"`
	SetAt     time.Time `json:"set_at"`
}

// SetPolicy sets whether jobs need two people: for every job when change
// is "", for the jobs of the declared change otherwise. Only the schema's
// owner may (an [AccessError] otherwise). A job keeps the rule it was
// registered under. It returns the whole policy.
func SetPolicy(ctx context.Context, db DB, change string, twoPerson bool) ([]Policy, error) {
	var arg any
	if change != "" {
		if err := checkChangeName("change", change); err != nil {
			return nil, err
		}
		arg = change
	}
	var p []Policy
	_, err := QueryJSON(ctx, db, &p, "set_policy", arg, twoPerson)
	return p, err
}

// Policies reads the approval policy: empty when none was set (one person).
func Policies(ctx context.Context, db DB) ([]Policy, error) {
	var p []Policy
	_, err := QueryJSON(ctx, db, &p, "policy_list")
	return p, err
}

// Proposal is one thing that awaits, or got, a second person's approval.
type Proposal struct {
	JobID string `json:"job_id"`
	// Action is "run" (the job itself), "skip" or "abandon".
	Action string `json:"action"`
	// Detail is a skip's key and reason, an abandon's reason; empty for a run.
	Detail     ProposalDetail `json:"detail"`
	Digest     string         `json:"digest"` // what [Approve] takes
	ProposedBy string         `json:"proposed_by"`
	ProposedAt time.Time      `json:"proposed_at"`
	ApprovedBy *string        `json:"approved_by"` // nil while it waits
	ApprovedAt *time.Time     `json:"approved_at"`
	// Signature is the armored SSH signature of Digest the approver gave
	// (evidence: [VerifySignature] checks it); nil when none.
	Signature *string `json:"signature"`
}

// ProposalDetail is what a proposed skip or abandon would do.
type ProposalDetail struct {
	Key    *Key   `json:"key,omitempty"`    // a skip's target
	Reason string `json:"reason,omitempty"` // a skip's or an abandon's reason
}

// Approved is what [Approve] answers: the proposal, and whether this call
// approved it (false: it already was, and nothing changed).
type Approved struct {
	Proposal
	Approved bool `json:"approved"`
}

// PlanDigest is what a plan would be once registered, read-only
// ([DigestPlan]): the normalized plan and the digest an approver approves.
type PlanDigest struct {
	Plan         json.RawMessage `json:"plan"`
	Change       *string         `json:"change"`
	ChangeDigest *string         `json:"change_digest"`
	Digest       string          `json:"digest"`
	// TwoPerson says whether registering it now would propose it.
	TwoPerson bool `json:"two_person"`
}

// CampaignApproved is what [ApproveCampaign] answers.
type CampaignApproved struct {
	Name       string `json:"name"`
	Digest     string `json:"digest"`
	Approved   bool   `json:"approved"` // false: nothing was waiting, and nothing changed
	Jobs       int    `json:"jobs"`     // the jobs approved now
	ApprovedBy string `json:"approved_by"`
}

var digestPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// CheckDigest returns an [ErrInvalid] naming field unless digest is a
// sha256 as chunks prints it: 64 lowercase hex characters.
func CheckDigest(field, digest string) error {
	if !digestPattern.MatchString(digest) {
		return Invalidf("%s: must be the 64 lowercase hex characters of the sha256 that chunks plan and chunks approve print, got %s",
			field, Excerpt(digest, true))
	}
	return nil
}

// DigestPlan validates plan as [Register] does and answers, writing
// nothing, its normalized form and its approval digest.
func DigestPlan(ctx context.Context, db DB, plan Plan) (PlanDigest, error) {
	p, err := Manifest(plan.JobID, plan.Tenant, plan.Targets, plan.ChunkSize, plan.AllowPartial)
	if err != nil {
		return PlanDigest{}, err
	}
	body, err := json.Marshal(p)
	if err != nil {
		return PlanDigest{}, err
	}
	var d PlanDigest
	_, err = QueryJSON(ctx, db, &d, "plan_digest", nil, string(body))
	return d, err
}

// DigestChangePlan is [DigestPlan] for a job of the declared change.
func DigestChangePlan(ctx context.Context, db DB, change string, plan ChangePlan) (PlanDigest, error) {
	body, err := plan.check(change)
	if err != nil {
		return PlanDigest{}, err
	}
	var d PlanDigest
	_, err = QueryJSON(ctx, db, &d, "plan_digest", change, body)
	return d, err
}

// Proposals lists job's proposals, oldest first (empty for a one-person
// job). An unknown job is an [ErrConflict].
func Proposals(ctx context.Context, db DB, jobID string) ([]Proposal, error) {
	if err := checkName("job_id", jobID); err != nil {
		return nil, err
	}
	var p []Proposal
	_, err := QueryJSON(ctx, db, &p, "job_proposals", jobID)
	return p, err
}

// Approve approves what awaits approval in job under digest, as the
// session's role: the job itself (it runs from now on), or a proposed skip
// or abandon of it (done now, recorded as its proposer's). signature, when
// not "", is an armored SSH signature of digest ([SignDigest]), kept with
// the approval. The proposer approving, a digest that is not what was
// proposed, or nothing waiting, is an [ErrConflict]; a role without the
// approver access is refused by the server (SQLSTATE 42501).
func Approve(ctx context.Context, db DB, jobID, digest, signature string) (Approved, error) {
	if err := checkName("job_id", jobID); err != nil {
		return Approved{}, err
	}
	if err := CheckDigest("digest", digest); err != nil {
		return Approved{}, err
	}
	var a Approved
	_, err := QueryJSON(ctx, db, &a, "approve", jobID, digest, nullable(signature))
	return a, err
}

// ApproveCampaign approves every proposed job of campaign name at once,
// given the campaign's digest, as [Approve] approves one.
func ApproveCampaign(ctx context.Context, db DB, name, digest, signature string) (CampaignApproved, error) {
	if err := checkName("name", name); err != nil {
		return CampaignApproved{}, err
	}
	if err := CheckDigest("digest", digest); err != nil {
		return CampaignApproved{}, err
	}
	var a CampaignApproved
	_, err := QueryJSON(ctx, db, &a, "campaign_approve", name, digest, nullable(signature))
	return a, err
}

// nullable is s, or SQL NULL for "".
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
