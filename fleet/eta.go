package fleet

import (
	"fmt"
	"time"
)

// The kinds of an [ETA].
const (
	// ETATime: at its recent rate the job is done in Seconds.
	ETATime = "time"
	// ETAThrottled: every live worker holds new chunks (package pace).
	// Seconds is set when the job moved recently: the time at that rate,
	// held as it was.
	ETAThrottled = "throttled"
	// ETAStalled: the job is queued, but nothing has moved it for longer
	// than [StallAfter] (or three chunks at its recent rate, when that is
	// longer): no live worker, every chunk failing, or a long wait for its
	// turn. QuietSeconds says how long.
	ETAStalled = "stalled"
	// ETAUnknown: the job is queued or running but no rate is known yet
	// (just queued, or moved only by chunks drain or run).
	ETAUnknown = "unknown"
	ETADone    = "done"   // nothing left
	ETAPaused  = "paused" // nothing runs it until chunks resume
	ETAIdle    = "idle"   // not queued: nothing runs it until chunks resume
	// ETAAbandoned: abandoned (chunks abandon); its remaining targets are never run.
	ETAAbandoned = "abandoned"
	// ETAProposed: waits for another role's approval (two people).
	ETAProposed = "proposed"
)

// StallAfter is the least time a queued job goes without progress before
// its ETA says stalled.
const StallAfter = time.Minute

// ETA is when a job will be done at its recent rate, or why that cannot
// be said: a time only where it is the truth.
type ETA struct {
	Kind    string   `json:"kind"`    // one of ETATime, ETAThrottled, ETAStalled, ETAUnknown, ETADone, ETAPaused, ETAIdle, ETAAbandoned, ETAProposed
	Seconds *float64 `json:"seconds"` // from now, at the recent rate (ETATime, and ETAThrottled when known)
	// QuietSeconds is how long the job has gone without progress: since
	// it last moved forward, or since it was queued when it never did.
	// Nil when not known, or when the job is done, paused, idle or abandoned.
	QuietSeconds *float64 `json:"quiet_seconds"`
}

// Estimate is j's ETA at now, given the live workers. The recent rate
// (j.Rate) gives a time only while the job keeps moving: once it has gone
// without progress for longer than [StallAfter], or than three chunks take
// at that rate, it is stalled instead, and while every live worker is
// throttled it is throttled.
func Estimate(j JobStatus, workers []WorkerStatus, now time.Time) ETA {
	switch j.State {
	case StateDone:
		return ETA{Kind: ETADone}
	case StatePaused:
		return ETA{Kind: ETAPaused}
	case StateIdle:
		return ETA{Kind: ETAIdle}
	case StateAbandoned:
		return ETA{Kind: ETAAbandoned}
	case StateProposed:
		return ETA{Kind: ETAProposed}
	}
	var e ETA
	since := j.ProgressedAt
	if since == nil {
		since = j.VisibleAt // queued and never seen moving: since it was queued
	}
	quiet := time.Duration(-1)
	if since != nil {
		quiet = max(now.Sub(*since), 0)
		e.QuietSeconds = seconds(quiet)
	}
	stall := StallAfter
	moving := j.Rate != nil && *j.Rate > 0
	if moving && j.ChunkSize > 0 {
		stall = max(stall, time.Duration(3*float64(j.ChunkSize) / *j.Rate * float64(time.Second)))
	}
	recent := moving && quiet >= 0 && quiet <= stall
	if recent {
		e.Seconds = seconds(time.Duration(float64(j.N-j.NextIndex) / *j.Rate * float64(time.Second)))
	}
	held := 0
	for _, w := range workers {
		if w.State == "throttled" {
			held++
		}
	}
	switch {
	case len(workers) > 0 && held == len(workers):
		e.Kind = ETAThrottled
	case j.State == StateQueued && quiet > stall:
		e.Kind = ETAStalled
	case recent:
		e.Kind = ETATime
	default:
		e.Kind = ETAUnknown
	}
	return e
}

func seconds(d time.Duration) *float64 {
	s := d.Seconds()
	return &s
}

// String is the ETA as chunks status and the status page show it: "3m 20s",
// "throttled (1m 05s at the recent rate)", "stalled: no progress for 4m 10s",
// "no rate yet", "done", "paused", "not queued".
func (e ETA) String() string {
	switch e.Kind {
	case ETATime:
		if e.Seconds != nil {
			return Duration(*e.Seconds)
		}
	case ETAThrottled:
		if e.Seconds != nil {
			return fmt.Sprintf("throttled (%s at the recent rate)", Duration(*e.Seconds))
		}
		return "throttled"
	case ETAStalled:
		if e.QuietSeconds != nil {
			return "stalled: no progress for " + Duration(*e.QuietSeconds)
		}
		return "stalled"
	case ETAUnknown:
		return "no rate yet"
	case ETAIdle:
		return "not queued"
	}
	return e.Kind
}
