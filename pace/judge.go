package pace

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// snapshot is what the pacer knows after a reading of the signals. The
// refresher publishes a new one after each reading and never changes one
// once published: [Pacer.Wait], [Pacer.State] and [Pacer.Committed] only
// read it, so none of them ever waits on the database.
type snapshot struct {
	read     time.Time         // when the reading ended (zero: nothing read yet)
	err      error             // the reading's failure, if it failed: it holds
	standbys []standby         // as last read
	samples  []sample          // primary positions read, oldest first
	pending  []commit          // this process's chunks that some standby has not replayed yet, oldest first
	slow     map[string]replay // per standby: how long it took to replay our last chunk it replayed
	hold     bool              // the throttle query's last answer
	until    time.Time         // decide on it without a new reading until then ([skipUntil]; zero: read+CheckInterval)
	replaced chan struct{}     // closed when the next snapshot is published
}

type standby struct {
	name      string
	replayLSN int64
	replayLag time.Duration // -1: not shown
}

type sample struct {
	lsn int64
	at  time.Time
}

// commit is a chunk of this process: when it committed, and the primary's
// position in the first reading after it (0 until then).
type commit struct {
	at  time.Time
	lsn int64
}

// replay is what the pacer knows of a standby's speed.
type replay struct {
	took  time.Duration // the replay time last measured (or the replay_lag shown before any)
	slow  bool          // took > the maximum
	timed bool          // took was measured on a chunk of ours
}

// reading is what one read of the signals returned.
type reading struct {
	began    time.Time // when it began
	at       time.Time // when it ended
	err      error     // it failed: everything else is unset
	current  int64     // the primary's WAL insert position
	standbys []standby
	hold     bool // the throttle query's answer
}

// maxKept bounds the samples and the pending chunks a snapshot keeps.
const maxKept = 10000

// observe is the snapshot after reading r, given the previous one and the
// chunks this process committed before the reading began (their commit
// times, oldest first): a pure function of its arguments.
func observe(maxLag time.Duration, prev *snapshot, r reading, committed []time.Time) *snapshot {
	next := &snapshot{
		read:     r.at,
		err:      r.err,
		standbys: prev.standbys,
		samples:  prev.samples,
		slow:     maps.Clone(prev.slow),
		hold:     prev.hold,
		replaced: make(chan struct{}),
	}
	if next.slow == nil {
		next.slow = map[string]replay{}
	}
	pending := slices.Clone(prev.pending)
	for _, at := range committed {
		if len(pending) < maxKept {
			pending = append(pending, commit{at: at})
		}
	}
	next.pending = pending
	if r.err != nil {
		return next
	}
	next.hold = r.hold
	if maxLag == 0 {
		return next
	}
	next.standbys = r.standbys
	next.samples = prune(append(slices.Clone(prev.samples), sample{lsn: r.current, at: r.at}), r.standbys)
	// Every chunk committed before this reading began is covered by its position.
	for i := range pending {
		if pending[i].lsn == 0 {
			pending[i].lsn = r.current
		}
	}
	for _, s := range r.standbys {
		rp, seen := next.slow[s.name]
		if !seen {
			// First seen: judge by the replay_lag it shows.
			rp = replay{took: max(s.replayLag, 0)}
			rp.slow = rp.took > maxLag
		}
		// Time the newest of our chunks it has replayed; a chunk it has
		// not replayed for longer than the maximum makes it slow already.
		for _, c := range pending {
			switch {
			case s.replayLSN >= c.lsn:
				rp.took = r.at.Sub(c.at)
				rp.slow, rp.timed = rp.took > maxLag, true
			case r.at.Sub(c.at) > maxLag:
				rp.took, rp.slow, rp.timed = max(rp.took, r.at.Sub(c.at)), true, true
			}
		}
		next.slow[s.name] = rp
	}
	// Forget the chunks every standby has replayed.
	next.pending = slices.DeleteFunc(pending, func(c commit) bool {
		return !slices.ContainsFunc(r.standbys, func(s standby) bool { return s.replayLSN < c.lsn })
	})
	return next
}

// prune keeps the samples that some standby still needs (the oldest one it
// has not replayed, and the one before it), and at most maxKept.
func prune(samples []sample, standbys []standby) []sample {
	oldest := int64(-1)
	for _, s := range standbys {
		if oldest < 0 || s.replayLSN < oldest {
			oldest = s.replayLSN
		}
	}
	keep := 0
	for keep < len(samples)-1 && samples[keep+1].lsn <= oldest {
		keep++
	}
	samples = samples[keep:]
	if len(samples) > maxKept {
		samples = samples[len(samples)-maxKept:]
	}
	return samples
}

// skipUntil is until when a decision may rest on snapshot s, the reading
// that began at began, without a new query: the lag check's skip rule, a
// pure function of its arguments. Normally that is one CheckInterval after
// the reading. It is later only when the reading said "far below the
// limit" for certain: it succeeded, only the lag check is configured (the
// throttle query is the operator's signal, read every interval), and,
// judged at the reading, no standby was slow, none was being timed and the
// worst was ℓ behind, with ℓ < L/2 (L: MaxReplicaLag). Then it is
//
//	began + L/2 - ℓ
//
// The reason: the lag is an age (of the oldest WAL a standby has not
// replayed, or of a chunk of ours it has not replayed), and an age grows
// one second per second, whatever the commit rate. A standby the reading
// saw ℓ behind is, t after the reading began, at most ℓ + t behind, even
// if it stopped replaying at that very moment and chunks commit as fast as
// they can: WAL written since is younger than t, and the chunks committed
// since count in [judge] as not replayed anywhere, with their ages. So
// until began + L/2 - ℓ no standby the reading saw is more than L/2
// behind, half the limit: a new reading could not throttle, and the
// decision on this one (with the chunks committed since) is the same one.
// Wait asks for the next reading one CheckInterval before that time,
// without waiting for it, so that a healthy standby costs no wait at all.
//
// What stays bounded: a standby that falls behind is seen by the first
// reading after the skip, at most L/2 after the last one, while it is at
// most L/2 behind, and held for when its lag passes L, as without the
// skip; a standby that connects during a skip is seen at most L/2 later.
func skipUntil(cfg Config, s *snapshot, began time.Time) time.Time {
	next := s.read.Add(cfg.CheckInterval)
	if s.err != nil || cfg.ThrottleQuery != "" || cfg.MaxReplicaLag == 0 || len(s.samples) == 0 {
		return next
	}
	for _, r := range s.slow {
		if r.slow {
			return next
		}
	}
	st := judge(cfg, s, nil, s.read)
	if st.Throttled || st.calibrating {
		return next
	}
	if far := began.Add(cfg.MaxReplicaLag/2 - st.Lag); far.After(next) {
		return far
	}
	return next
}

// judge decides from snapshot s at now, counting the chunks committed
// since s was read (unread, their commit times) as not replayed anywhere:
// a pure function of its arguments.
func judge(cfg Config, s *snapshot, unread []time.Time, now time.Time) State {
	if s.err != nil {
		return State{Throttled: true, Reason: s.err.Error(), Cause: CauseCheckFailed}
	}
	var st State
	if cfg.MaxReplicaLag > 0 && len(s.samples) > 0 {
		pending := s.pending
		if len(unread) > 0 {
			pending = slices.Clone(pending)
			for _, at := range unread {
				pending = append(pending, commit{at: at})
			}
		}
		worst, worstName := time.Duration(0), ""
		for _, sb := range s.standbys {
			if lag := behind(s, pending, sb, now); lag > worst {
				worst, worstName = lag, sb.name
			}
			if calibrating(s, pending, sb) {
				st.calibrating = true
			}
		}
		st.Lag = worst
		if worst > cfg.MaxReplicaLag {
			return State{Throttled: true, Lag: worst, Cause: CauseReplicaLag,
				Reason: fmt.Sprintf("replica %s is %.1f s behind (max %v)", worstName, worst.Seconds(), cfg.MaxReplicaLag)}
		}
	}
	if cfg.ThrottleQuery != "" && s.hold {
		st.Throttled, st.Reason, st.Cause = true, "the throttle query returned true", CauseThrottleQuery
	}
	return st
}

// calibrating reports whether sb has not been timed on a chunk of ours yet
// and has a chunk of ours to replay: the pacer then waits for that first
// replay (a fraction of a second on a healthy standby), without calling it
// throttling, rather than guess its speed and let a burst of chunks through.
func calibrating(s *snapshot, pending []commit, sb standby) bool {
	r, seen := s.slow[sb.name]
	if !seen || r.timed || r.slow {
		return false
	}
	return slices.ContainsFunc(pending, func(c commit) bool { return c.lsn == 0 || c.lsn > sb.replayLSN })
}

// behind is how far sb is behind at now: the age of the oldest position
// it has not replayed, of those read and of this process's chunks; and,
// for a slow standby with a chunk of ours to replay, at least what its last
// replay took.
func behind(s *snapshot, pending []commit, sb standby, now time.Time) time.Duration {
	var lag time.Duration
	for _, x := range s.samples {
		if x.lsn > sb.replayLSN {
			lag = now.Sub(x.at)
			break
		}
	}
	for _, c := range pending {
		if c.lsn == 0 || c.lsn > sb.replayLSN {
			lag = max(lag, now.Sub(c.at))
			if r := s.slow[sb.name]; r.slow {
				lag = max(lag, r.took)
			}
			break
		}
	}
	return lag
}
