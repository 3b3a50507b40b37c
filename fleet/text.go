package fleet

import (
	"fmt"
	"time"

	"github.com/chunks-dev/chunks/driver"
)

// Detail is what chunks status and the status page say beside a job's
// state: in which session it runs, who paused it, when and why, or until
// when it rests. Times are shown in the local time zone.
func (j JobStatus) Detail(now time.Time) string {
	switch {
	case j.State == StateRunning && j.RunningIn != nil:
		return "in " + *j.RunningIn
	case (j.State == StatePaused || j.State == StateAbandoned) && j.PausedAt != nil:
		return fmt.Sprintf("at %s by %s: %s", j.PausedAt.Local().Format("15:04:05"), orUnknown(j.PausedBy), orUnknown(j.PauseReason))
	case j.State == StateProposed && j.Approval != nil:
		return fmt.Sprintf("proposed by %s at %s, awaiting approval of %s", j.Approval.ProposedBy, j.Approval.ProposedAt.Local().Format("15:04:05"),
			j.Approval.Digest[:min(12, len(j.Approval.Digest))])
	case j.VisibleAt != nil && j.VisibleAt.After(now):
		return "rests until " + j.VisibleAt.Local().Format("15:04:05.000")
	}
	return ""
}

// ApprovalText is who proposed and who approved a two-person job that was
// approved ("proposed by alice, approved by bob at 10:04:05, digest
// 5be0c3a1f2d9"); "" for a one-person job or one that still waits (Detail
// says so then).
func (j JobStatus) ApprovalText() string {
	a := j.Approval
	if a == nil || a.ApprovedBy == nil || a.ApprovedAt == nil {
		return ""
	}
	return fmt.Sprintf("proposed by %s, approved by %s at %s, digest %s", a.ProposedBy, *a.ApprovedBy,
		a.ApprovedAt.Local().Format("15:04:05"), a.Digest[:min(12, len(a.Digest))])
}

// KindText is a job's kind as chunks status and the status page show it:
// cancel, "undo of JOB", "change NAME" (a job of a declared change) or
// "undo of JOB (change NAME)" (the undo of a job of a declared change).
func (j JobStatus) KindText() string {
	switch {
	case j.Kind == driver.KindRestore && j.Undoes != nil && j.Change != nil:
		return "undo of " + *j.Undoes + " (change " + *j.Change + ")"
	case j.Kind == driver.KindRestore && j.Undoes != nil:
		return "undo of " + *j.Undoes
	case j.Change != nil:
		return "change " + *j.Change
	}
	return j.Kind
}

func orUnknown(s *string) string {
	if s == nil {
		return "?"
	}
	return *s
}

// Duration is s seconds, short: "<1s", "42s", "3m 20s", "2h 05m", "3d 04h".
func Duration(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	switch {
	case d < time.Second:
		return "<1s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh %02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd %02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// Rate is a rate in ids per second, short: "12 ids/s", "2.5 ids/s",
// "4.0 ids/min", "1.5 ids/h"; "" when it is not known.
func Rate(rate *float64) string {
	switch r := rate; {
	case r == nil:
		return ""
	case *r >= 10:
		return fmt.Sprintf("%.0f ids/s", *r)
	case *r >= 1:
		return fmt.Sprintf("%.1f ids/s", *r)
	case *r*60 >= 1:
		return fmt.Sprintf("%.1f ids/min", *r*60)
	}
	return fmt.Sprintf("%.1f ids/h", *rate*3600)
}

// CampaignState is one word for a campaign's progress, as chunks status and
// the status page show it: done, paused (by campaign pause), stalled
// (targets remain and nothing can move: its jobs wait for a decision),
// running (a chunk in flight) or queued.
func CampaignState(p driver.CampaignProgress) string {
	switch {
	case p.Remaining-p.AbandonedTargets == 0:
		return "done"
	case p.Paused:
		return "paused"
	case p.JobsProposed > 0 && p.JobsRunning == 0:
		return "proposed"
	case p.Stalled:
		return "stalled"
	case p.JobsRunning > 0:
		return "running"
	}
	return "queued"
}

// CampaignETA is a campaign's ETA in words: a time at its recent rate, or
// why there is none, never a made-up time when nothing can move.
func CampaignETA(p driver.CampaignProgress) string {
	switch {
	case p.Remaining-p.AbandonedTargets == 0:
		return "none: done"
	case p.Stalled && p.Paused:
		return "none: the campaign is paused (chunks campaign resume)"
	case p.Stalled && p.JobsProposed > 0 && p.ProposedBy != nil:
		return "none: proposed by " + *p.ProposedBy + ", awaiting approval (chunks campaign approve)"
	case p.Stalled:
		n := "1 job"
		if p.JobsPaused != 1 {
			n = fmt.Sprintf("%d jobs", p.JobsPaused)
		}
		return "none: " + n + " paused, waiting for a decision"
	case p.ETASeconds != nil:
		return fmt.Sprintf("%.1f s", *p.ETASeconds)
	}
	return "unknown"
}
