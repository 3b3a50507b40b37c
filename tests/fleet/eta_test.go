package fleet

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	fleetapi "github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// progressed gives job a progress row: it reached next at atAgo before
// now, from base next_index 0 at baseAgo ('30 s', '10 minutes'...).
func (l *lab) progressed(t testing.TB, job string, next int, atAgo, baseAgo string) {
	t.Helper()
	l.Exec(t, `insert into job_progress values ($1, $2, now() - $3::interval, $2, now() - $3::interval, 0, now() - $4::interval)`,
		job, next, atAgo, baseAgo)
}

// heartbeat writes a live worker's row, as a worker's heartbeat does.
func (l *lab) heartbeat(t testing.TB, id, state string, reason *string) {
	t.Helper()
	l.Exec(t, "select worker_heartbeat($1, 'host', 1, now(), 0, $2, $3)", id, state, reason)
}

// The ETA is a time only while a job keeps moving at its recent rate: a
// queued job that has not moved for longer than a minute (or three chunks
// at its rate) is stalled, one that no rate is known for says so, and
// while every live worker is throttled every runnable job is throttled,
// with the time at its recent rate when it moved recently. chunks status
// shows the same, in text and JSON.
func TestETA(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	newJobs(t, l, "moving slow stalled fresh done paused idle", 20, 5)
	for _, j := range []string{"moving", "stalled"} {
		l.Exec(t, "select run_chunk($1)", j)
		l.Exec(t, "select run_chunk($1)", j) // 10 of 20
	}
	l.Exec(t, "select run_chunk('slow')")
	for range 4 {
		l.Exec(t, "select run_chunk('done')")
	}
	l.Exec(t, "delete from job_queue where job_id in ('done', 'idle')")
	if _, err := fleetapi.Pause(ctx, l.Conn, driver.JobRef{ID: "paused"}); err != nil {
		t.Fatal(err)
	}
	l.progressed(t, "moving", 10, "2 s", "32 s")               // 10 ids in 30 s: the other 10 in 30 s
	l.progressed(t, "stalled", 10, "10 minutes", "11 minutes") // the same rate, but 10 minutes ago
	l.progressed(t, "slow", 5, "5 minutes", "55 minutes")      // 5 ids in 50 minutes: a chunk every 50 minutes

	type want struct {
		kind    string
		seconds float64 // when > 0
		text    string  // a prefix of ETA.String()
	}
	check := func(wants map[string]want) {
		t.Helper()
		for id, st := range l.status(t) {
			w := wants[id]
			e := st.ETA
			if e.Kind != w.kind || !strings.HasPrefix(e.String(), w.text) ||
				(w.seconds > 0) != (e.Seconds != nil) || (e.Seconds != nil && !near(*e.Seconds, w.seconds)) {
				t.Errorf("%s: ETA %+v (%q), want %s %v %q", id, e, e.String(), w.kind, w.seconds, w.text)
			}
		}
	}
	moving := want{fleetapi.ETATime, 30, "30s"}
	slow := want{fleetapi.ETATime, 15 * 600, "2h 30m"}
	base := map[string]want{
		"moving": moving, "slow": slow,
		"stalled": {fleetapi.ETAStalled, 0, "stalled: no progress for 10m"},
		"fresh":   {fleetapi.ETAUnknown, 0, "no rate yet"},
		"done":    {fleetapi.ETADone, 0, "done"},
		"paused":  {fleetapi.ETAPaused, 0, "paused"},
		"idle":    {fleetapi.ETAIdle, 0, "not queued"},
	}
	check(base)

	// chunks status: the rate and the ETA, in text and JSON.
	human := l.Chunks(t, "status", "--all")
	if human.Code != 0 {
		t.Fatalf("chunks status: %v", human)
	}
	for id, parts := range map[string][]string{"moving": {"20.0 ids/min", "30s"}, "slow": {"6.0 ids/h", "2h 30m"},
		"stalled": {"stalled: no progress for 10m"}, "fresh": {"no rate yet"}} {
		if !strings.Contains(human.Stdout, id) || !lineWith(human.Stdout, append([]string{id}, parts...)...) {
			t.Errorf("chunks status: the line of %s lacks %q:\n%s", id, parts, human.Stdout)
		}
	}
	js := l.Chunks(t, "status", "--json")
	var out struct {
		Jobs []fleetapi.JobStatus `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(js.Stdout), &out); err != nil || js.Code != 0 {
		t.Fatalf("chunks status --json: %v %v", err, js)
	}
	for _, j := range out.Jobs {
		if w := base[j.JobID]; j.ETA.Kind != w.kind || (j.JobID == "moving" && (j.Rate == nil || !near(*j.Rate, 1.0/3))) {
			t.Errorf("--json %s: rate %v, eta %+v; want %s", j.JobID, j.Rate, j.ETA, w.kind)
		}
	}

	// Every live worker throttled: every runnable job is throttled.
	reason := "replica standby1 is 2.1 s behind (max 500ms)"
	l.heartbeat(t, "w1", "throttled", &reason)
	l.heartbeat(t, "w2", "throttled", &reason)
	held := map[string]want{}
	for id, w := range base {
		held[id] = w
	}
	held["moving"] = want{fleetapi.ETAThrottled, 30, "throttled (30s at the recent rate)"}
	held["slow"] = want{fleetapi.ETAThrottled, 15 * 600, "throttled (2h 30m at the recent rate)"}
	held["stalled"] = want{fleetapi.ETAThrottled, 0, "throttled"}
	held["fresh"] = want{fleetapi.ETAThrottled, 0, "throttled"}
	check(held)
	// One that is not: the figures are back.
	l.heartbeat(t, "w3", "idle", nil)
	check(base)
}

// lineWith says whether a line of out holds every part.
func lineWith(out string, parts ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		if clitest.ContainsAll(line, parts...) {
			return true
		}
	}
	return false
}

// A worker's heartbeats record its jobs' progress: while it runs a job at
// two chunks a second, chunks status --json shows a recent rate and an ETA
// of the ids left at that rate; when the job is done, its row holds its
// last next_index.
func TestWorkerRecordsProgress(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	j := newSeeder(l, 31).job(t, "festival", 12, 1)
	l.register(t, j)
	w := l.worker(t, "w1", "--rate", "2", "--poll", "100ms")
	var st fleetapi.JobStatus
	pgtest.WaitFor(t, 20*time.Second, "a rate and an ETA in chunks status --json", func() bool {
		r := l.Chunks(t, "status", "--json")
		var out struct {
			Jobs []fleetapi.JobStatus `json:"jobs"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || r.Code != 0 || len(out.Jobs) != 1 {
			t.Fatalf("chunks status --json: %v %v", err, r)
		}
		st = out.Jobs[0]
		return st.ETA.Kind == fleetapi.ETATime
	})
	if st.Rate == nil || *st.Rate <= 0 || st.ProgressedAt == nil || st.ETA.Seconds == nil ||
		!near(*st.ETA.Seconds, float64(st.N-st.NextIndex) / *st.Rate) {
		t.Fatalf("while it runs: rate %v, progressed %v, eta %+v at %d/%d", st.Rate, st.ProgressedAt, st.ETA, st.NextIndex, st.N)
	}
	pgtest.WaitFor(t, 30*time.Second, "the job done", func() bool { return l.allDone(t) })
	stopWorkers(t, w) // its last heartbeat records the last chunks
	if got := pgtest.MustInt(t, l.Conn, "select next_index from job_progress where job_id = 'festival'"); got != len(j.Targets) {
		t.Fatalf("job_progress says next_index %d, want %d", got, len(j.Targets))
	}
	if e := l.status(t)["festival"].ETA; e.Kind != fleetapi.ETADone {
		t.Fatalf("ETA of the finished job: %+v", e)
	}
	l.wantFinished(t, []job{j})
}
