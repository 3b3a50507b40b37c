package pace

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// t0 is the fake clock's start: every time in these tests is t0 plus an offset.
var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const ms = time.Millisecond

var lagged = Config{MaxReplicaLag: 500 * ms}

// empty is the snapshot before any reading.
func empty() *snapshot { return &snapshot{replaced: make(chan struct{})} }

func TestJudgeFailedReadingHolds(t *testing.T) {
	s := observe(0, empty(), reading{at: at(0), err: errors.New("throttle query timed out after 1s")}, nil)
	st := judge(Config{ThrottleQuery: "select true"}, s, nil, at(10*ms))
	if !st.Throttled || st.Cause != CauseCheckFailed || st.Reason != "throttle query timed out after 1s" {
		t.Fatalf("a failed reading: %+v, want a hold for check_failed with the failure as the reason", st)
	}
}

func TestJudgeThrottleQueryAnswer(t *testing.T) {
	cfg := Config{ThrottleQuery: "select true"}
	held := observe(0, empty(), reading{at: at(0), hold: true}, nil)
	if st := judge(cfg, held, nil, at(0)); !st.Throttled || st.Cause != CauseThrottleQuery || st.Reason != "the throttle query returned true" {
		t.Fatalf("true: %+v", st)
	}
	free := observe(0, held, reading{at: at(100 * ms), hold: false}, nil)
	if st := judge(cfg, free, nil, at(100*ms)); st.Throttled || st.calibrating {
		t.Fatalf("false after true: %+v", st)
	}
	// A failed reading after a true one holds for the failure, and the one
	// after that (true again) for the query.
	failed := observe(0, held, reading{at: at(200 * ms), err: errors.New("throttle query failed: boom")}, nil)
	if st := judge(cfg, failed, nil, at(200*ms)); st.Cause != CauseCheckFailed {
		t.Fatalf("failed: %+v", st)
	}
}

// A standby that replayed everything the primary wrote is not behind,
// whatever replay_lag it still shows; with nothing of ours to replay it is
// not calibrating either.
func TestJudgeCaughtUpStandbyIsNotBehind(t *testing.T) {
	r := reading{at: at(0), current: 1000, standbys: []standby{{name: "s1", replayLSN: 1000, replayLag: 5 * time.Second}}}
	s := observe(lagged.MaxReplicaLag, empty(), r, nil)
	st := judge(lagged, s, nil, at(3*time.Second))
	if st.Throttled || st.calibrating || st.Lag != 0 {
		t.Fatalf("caught-up standby: %+v", st)
	}
}

// A standby that has not replayed a position is behind by that position's
// age, named in the reason.
func TestJudgeBehindByTheOldestUnreplayedPosition(t *testing.T) {
	s := observe(lagged.MaxReplicaLag, empty(), reading{at: at(0), current: 1000,
		standbys: []standby{{name: "s1", replayLSN: 1000}, {name: "s2", replayLSN: 900, replayLag: -1}}}, nil)
	s = observe(lagged.MaxReplicaLag, s, reading{at: at(100 * ms), current: 2000,
		standbys: []standby{{name: "s1", replayLSN: 2000}, {name: "s2", replayLSN: 900, replayLag: -1}}}, nil)
	if st := judge(lagged, s, nil, at(400*ms)); st.Throttled || st.Lag != 400*ms {
		t.Fatalf("400 ms behind, max 500ms: %+v", st)
	}
	st := judge(lagged, s, nil, at(700*ms))
	if !st.Throttled || st.Cause != CauseReplicaLag || st.Lag != 700*ms || st.Reason != "replica s2 is 0.7 s behind (max 500ms)" {
		t.Fatalf("700 ms behind: %+v", st)
	}
}

// An untimed standby makes the first chunk of ours wait for its replay
// (calibrating, not throttling); once it replayed the chunk in time it is
// timed and holds nothing.
func TestJudgeCalibratesOnTheFirstChunk(t *testing.T) {
	s := observe(lagged.MaxReplicaLag, empty(), reading{at: at(0), current: 1000,
		standbys: []standby{{name: "s1", replayLSN: 1000}}}, nil)
	unread := []time.Time{at(10 * ms)}
	if st := judge(lagged, s, unread, at(20*ms)); st.Throttled || !st.calibrating {
		t.Fatalf("a chunk no reading covers yet: %+v, want calibrating", st)
	}
	s = observe(lagged.MaxReplicaLag, s, reading{at: at(50 * ms), current: 1500,
		standbys: []standby{{name: "s1", replayLSN: 1200}}}, unread)
	if st := judge(lagged, s, nil, at(60*ms)); !st.calibrating {
		t.Fatalf("chunk at 1500 not replayed (1200): %+v, want calibrating", st)
	}
	s = observe(lagged.MaxReplicaLag, s, reading{at: at(90 * ms), current: 1500,
		standbys: []standby{{name: "s1", replayLSN: 1500}}}, nil)
	if r := s.slow["s1"]; !r.timed || r.slow || r.took != 80*ms {
		t.Fatalf("replay timing %+v, want timed, 80ms, not slow", r)
	}
	if st := judge(lagged, s, nil, at(100*ms)); st.Throttled || st.calibrating || len(s.pending) != 0 {
		t.Fatalf("after the replay: %+v, pending %v", st, s.pending)
	}
}

// A standby that took longer than the maximum to replay our last chunk is
// slow: the next chunk is held for at least that long, until it is replayed.
func TestJudgeSlowStandbyHoldsEachChunk(t *testing.T) {
	s := observe(lagged.MaxReplicaLag, empty(), reading{at: at(0), current: 1000,
		standbys: []standby{{name: "s1", replayLSN: 1000}}}, nil)
	s = observe(lagged.MaxReplicaLag, s, reading{at: at(10 * ms), current: 1100,
		standbys: []standby{{name: "s1", replayLSN: 1000}}}, []time.Time{at(5 * ms)})
	s = observe(lagged.MaxReplicaLag, s, reading{at: at(2 * time.Second), current: 1100,
		standbys: []standby{{name: "s1", replayLSN: 1100}}}, nil)
	if r := s.slow["s1"]; !r.slow || r.took != 2*time.Second-5*ms {
		t.Fatalf("replay timing %+v, want slow, 1.995s", r)
	}
	if st := judge(lagged, s, nil, at(2*time.Second+time.Millisecond)); st.Throttled {
		t.Fatalf("nothing of ours to replay: %+v", st)
	}
	st := judge(lagged, s, []time.Time{at(2*time.Second + 2*ms)}, at(2*time.Second+3*ms))
	if !st.Throttled || st.Lag != 2*time.Second-5*ms {
		t.Fatalf("the next chunk on a slow standby: %+v, want held for the last replay's 1.995s", st)
	}
}

// A chunk not replayed for longer than the maximum makes the standby slow
// even before it replays it.
func TestObserveUnreplayedChunkMakesTheStandbySlow(t *testing.T) {
	s := observe(lagged.MaxReplicaLag, empty(), reading{at: at(0), current: 1000,
		standbys: []standby{{name: "s1", replayLSN: 1000}}}, []time.Time{})
	s = observe(lagged.MaxReplicaLag, s, reading{at: at(100 * ms), current: 1100,
		standbys: []standby{{name: "s1", replayLSN: 1000}}}, []time.Time{at(50 * ms)})
	s = observe(lagged.MaxReplicaLag, s, reading{at: at(900 * ms), current: 1100,
		standbys: []standby{{name: "s1", replayLSN: 1000}}}, nil)
	if r := s.slow["s1"]; !r.slow || !r.timed || r.took != 850*ms {
		t.Fatalf("replay timing %+v, want slow after 850ms unreplayed", r)
	}
}

// A standby first seen showing a replay_lag over the maximum is slow from
// the start; one under it is not.
func TestObserveFirstSeenReplayLag(t *testing.T) {
	s := observe(lagged.MaxReplicaLag, empty(), reading{at: at(0), current: 1000, standbys: []standby{
		{name: "fast", replayLSN: 1000, replayLag: 10 * ms}, {name: "late", replayLSN: 1000, replayLag: 2 * time.Second}}}, nil)
	if s.slow["fast"].slow || !s.slow["late"].slow || s.slow["late"].took != 2*time.Second {
		t.Fatalf("first seen: %+v", s.slow)
	}
}

// A failed reading keeps what the last one knew and the chunks committed
// before it, for the next reading to place.
func TestObserveFailedReadingKeepsTheChunks(t *testing.T) {
	s := observe(lagged.MaxReplicaLag, empty(), reading{at: at(0), current: 1000,
		standbys: []standby{{name: "s1", replayLSN: 1000}}}, nil)
	f := observe(lagged.MaxReplicaLag, s, reading{at: at(100 * ms), err: errors.New("replica lag check failed: x")},
		[]time.Time{at(50 * ms)})
	if len(f.pending) != 1 || f.pending[0].lsn != 0 || len(f.samples) != 1 || f.standbys[0].name != "s1" {
		t.Fatalf("after a failed reading: pending %v samples %v standbys %v", f.pending, f.samples, f.standbys)
	}
	n := observe(lagged.MaxReplicaLag, f, reading{at: at(200 * ms), current: 1300,
		standbys: []standby{{name: "s1", replayLSN: 1000}}}, nil)
	if len(n.pending) != 1 || n.pending[0].lsn != 1300 {
		t.Fatalf("the next reading places the chunk: %v", n.pending)
	}
	if len(s.pending) != 0 || len(s.samples) != 1 {
		t.Fatalf("a published snapshot changed: pending %v samples %v", s.pending, s.samples)
	}
}

func TestPruneKeepsWhatAStandbyNeeds(t *testing.T) {
	samples := []sample{{100, at(0)}, {200, at(ms)}, {300, at(2 * ms)}, {400, at(3 * ms)}}
	got := prune(samples, []standby{{name: "a", replayLSN: 350}, {name: "b", replayLSN: 250}})
	if len(got) != 3 || got[0].lsn != 200 {
		t.Fatalf("prune: %v, want from 200 (the one before b's oldest unreplayed, 300)", got)
	}
	many := make([]sample, maxKept+5)
	for i := range many {
		many[i] = sample{lsn: int64(i + 1), at: at(time.Duration(i))}
	}
	if got := prune(many, []standby{{name: "a", replayLSN: 0}}); len(got) != maxKept || got[0].lsn != 6 {
		t.Fatalf("prune of %d: kept %d from %d", len(many), len(got), got[0].lsn)
	}
}

func TestReasonKind(t *testing.T) {
	for reason, kind := range map[string]string{
		"replica s1 is 2.1 s behind (max 500ms)": "replica s1",
		"throttle query timed out after 1s":      "throttle query timed out",
		"the throttle query returned true":       "the throttle query returned true",
	} {
		if got := reasonKind(reason); got != kind {
			t.Errorf("reasonKind(%q) = %q, want %q", reason, got, kind)
		}
	}
	if strings.Contains(reasonKind("replica s1 is 9.9 s behind (max 1s)"), "9.9") {
		t.Error("figures kept")
	}
}

func TestReadTimeoutIsAtLeastASecond(t *testing.T) {
	for interval, want := range map[time.Duration]time.Duration{0: time.Second, 50 * ms: time.Second, 5 * time.Second: 5 * time.Second} {
		p, err := New(Config{ThrottleQuery: "select true", CheckInterval: interval}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.ReadTimeout(); got != want {
			t.Errorf("check interval %v: read timeout %v, want %v", interval, got, want)
		}
		p.Close() // never waited on: nothing to stop, returns at once
	}
}

// far is a lag check of 1 s read every 100 ms: the skip rule's figures.
var far = Config{MaxReplicaLag: time.Second, CheckInterval: 100 * ms}

// The skip rule: after a reading that found every standby far below the
// limit (ℓ behind, ℓ < L/2), no query until the reading's start + L/2 - ℓ;
// in every other case one CheckInterval after the reading, as without it.
func TestSkipUntil(t *testing.T) {
	caughtUp := reading{began: at(-5 * ms), at: at(0), current: 1000, standbys: []standby{{name: "s1", replayLSN: 1000}}}
	s := observe(far.MaxReplicaLag, empty(), caughtUp, nil)
	if got := skipUntil(far, s, caughtUp.began); !got.Equal(at(495 * ms)) {
		t.Fatalf("caught up: until %v, want the reading's start + 500ms", got.Sub(t0))
	}
	// Our chunk at 10 ms, not replayed at 100 ms by a standby never timed:
	// calibrating, so the next reading comes one interval later.
	r := reading{began: at(95 * ms), at: at(100 * ms), current: 1100, standbys: []standby{{name: "s1", replayLSN: 1000}}}
	s = observe(far.MaxReplicaLag, s, r, []time.Time{at(10 * ms)})
	if got := skipUntil(far, s, r.began); !got.Equal(at(200 * ms)) {
		t.Fatalf("calibrating: until %v, want the reading + 100ms", got.Sub(t0))
	}
	// Replayed at 200 ms (timed: 190ms); the next chunk, at 250 ms, not yet
	// at 400 ms: 150 ms behind, so until 395 + 500 - 150.
	r = reading{began: at(195 * ms), at: at(200 * ms), current: 1100, standbys: []standby{{name: "s1", replayLSN: 1100}}}
	s = observe(far.MaxReplicaLag, s, r, nil)
	r = reading{began: at(395 * ms), at: at(400 * ms), current: 1200, standbys: []standby{{name: "s1", replayLSN: 1100}}}
	s = observe(far.MaxReplicaLag, s, r, []time.Time{at(250 * ms)})
	if st := judge(far, s, nil, s.read); st.Lag != 150*ms || st.calibrating {
		t.Fatalf("judged at the reading: %+v, want 150ms behind, timed", st)
	}
	if got := skipUntil(far, s, r.began); !got.Equal(at(745 * ms)) {
		t.Fatalf("150ms behind: until %v, want 395ms + 500ms - 150ms", got.Sub(t0))
	}

	for _, c := range []struct {
		what string
		cfg  Config
		r    reading
	}{
		{"near the limit (450ms behind)", far, reading{began: at(-5 * ms), at: at(0), current: 2000,
			standbys: []standby{{name: "s1", replayLSN: 1000}}}},
		{"a throttle query too", Config{MaxReplicaLag: time.Second, CheckInterval: 100 * ms, ThrottleQuery: "select false"}, caughtUp},
		{"a failed reading", far, reading{began: at(-5 * ms), at: at(0), err: errors.New("replica lag check failed: boom")}},
	} {
		prev := observe(far.MaxReplicaLag, empty(), reading{at: at(-450 * ms), current: 1500,
			standbys: []standby{{name: "s1", replayLSN: 1000}}}, nil)
		s := observe(c.cfg.MaxReplicaLag, prev, c.r, nil)
		if got := skipUntil(c.cfg, s, c.r.began); !got.Equal(at(100 * ms)) {
			t.Errorf("%s: until %v, want the reading + 100ms", c.what, got.Sub(t0))
		}
	}
	slow := observe(far.MaxReplicaLag, empty(), reading{at: at(0), current: 1000,
		standbys: []standby{{name: "s1", replayLSN: 1000, replayLag: 3 * time.Second}}}, nil)
	if got := skipUntil(far, slow, at(-5*ms)); !got.Equal(at(100 * ms)) {
		t.Errorf("a slow standby: until %v, want the reading + 100ms", got.Sub(t0))
	}
}

// What the skip cannot hide: a standby that stops replaying right after a
// reading that found it caught up, while chunks commit every 10 ms. Up to
// the skip's end every decision finds it at most L/2 behind (so a new
// reading could not have throttled); the reading at the skip's end sees
// the standby's lag as it is, and, read every interval from then on as
// the rule says (it is no longer far below), it is held for before it is
// L + one interval behind: what the check did without the skip.
func TestSkipHidesNoStandbyThatFallsBehind(t *testing.T) {
	caughtUp := reading{began: at(-5 * ms), at: at(0), current: 1000, standbys: []standby{{name: "s1", replayLSN: 1000}}}
	s := observe(far.MaxReplicaLag, empty(), caughtUp, nil)
	s.slow["s1"] = replay{took: 20 * ms, timed: true} // timed on an earlier chunk
	until := skipUntil(far, s, caughtUp.began)
	var unread []time.Time
	lsn := int64(1000)
	for now := at(0); ; now = now.Add(10 * ms) {
		if !now.Before(until) {
			// The reading Wait waits for: every chunk so far is in it, the
			// standby still at 1000.
			lsn += 100
			r := reading{began: now, at: now, current: lsn, standbys: []standby{{name: "s1", replayLSN: 1000}}}
			s = observe(far.MaxReplicaLag, s, r, unread)
			unread = nil
			until = skipUntil(far, s, r.began)
		}
		st := judge(far, s, unread, now)
		if st.Throttled {
			if now.After(at(far.MaxReplicaLag + far.CheckInterval)) {
				t.Fatalf("held for first at %v, want by L + one interval", now.Sub(t0))
			}
			return
		}
		if now.Before(at(far.MaxReplicaLag/2)) && st.Lag > far.MaxReplicaLag/2 {
			t.Fatalf("at %v judged %v behind during the skip, more than L/2", now.Sub(t0), st.Lag)
		}
		if now.After(at(2 * time.Second)) {
			t.Fatal("never held for a standby that stopped replaying")
		}
		unread = append(unread, now) // a chunk commits
	}
}
