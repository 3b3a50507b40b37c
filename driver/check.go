package driver

import (
	"context"
	"encoding/json"
)

// The states of a plan's job id in a [PlanCheck].
const (
	JobFree       = "free"       // no job has the id: register would create it
	JobRegistered = "registered" // the same approval has the id: register changes nothing
	JobConflict   = "conflict"   // another approval has the id: register would refuse
)

// PlanCheck is the preflight of a plan ([CheckPlan], SQL check_plan): what
// [Register] followed by [Drain] would do now.
type PlanCheck struct {
	JobID string `json:"job_id"`
	// OK is true when every target is OK and Job is not [JobConflict].
	OK bool `json:"ok"`
	// Job is [JobFree], [JobRegistered] or [JobConflict]; JobProblem is
	// register's conflict, in its words, when it is a conflict (else "").
	Job        string `json:"job"`
	JobProblem string `json:"job_problem"`
	// Targets are the plan's targets in id order.
	Targets []TargetCheck `json:"targets"`
}

// TargetCheck is one target of a [PlanCheck]. OK is true when the order
// would be cancelled now; otherwise Problem says why, in the words of the
// conflict its chunk would raise ("order 17: revision is 5, approved 4").
// Committed is true for a target that the registered job (the same
// approval) has already cancelled: drain never changes it again, so it is
// OK.
type TargetCheck struct {
	ID        int64  `json:"id"`
	OK        bool   `json:"ok"`
	Problem   string `json:"problem"`
	Committed bool   `json:"committed"`
}

// Problems are the targets that would not be cancelled.
func (c PlanCheck) Problems() []TargetCheck {
	var out []TargetCheck
	for _, t := range c.Targets {
		if !t.OK {
			out = append(out, t)
		}
	}
	return out
}

// MarshalJSON writes Targets as [] when empty, never null.
func (c PlanCheck) MarshalJSON() ([]byte, error) {
	type plain PlanCheck
	q := plain(c)
	q.Targets = nonNil(q.Targets)
	return json.Marshal(q)
}

// CheckPlan is the preflight of plan: it validates plan as [Register] does
// ([ErrInvalid] naming the field), then answers, in ONE SELECT on the
// server, whether each target's order would be cancelled now or exactly
// why not (missing, another tenant, its state, its revision moved, its
// qty), and whether the job id is free, already registered with this
// approval (register would be a no-op) or taken by another (a conflict).
// It reads only: no order or job is locked or written. A plan that would
// not apply is not an error: it is the answer, with OK false.
func CheckPlan(ctx context.Context, db DB, plan Plan) (PlanCheck, error) {
	p, err := Manifest(plan.JobID, plan.Tenant, plan.Targets, plan.ChunkSize, plan.AllowPartial)
	if err != nil {
		return PlanCheck{}, err
	}
	body, err := json.Marshal(p)
	if err != nil {
		return PlanCheck{}, err
	}
	var c PlanCheck
	if _, err := QueryJSON(ctx, db, &c, "check_plan", string(body)); err != nil {
		return PlanCheck{}, err
	}
	return c, nil
}
