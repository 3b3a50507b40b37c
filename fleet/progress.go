package fleet

import (
	"encoding/json"
	"sync"
	"time"
)

// maxProgress bounds the jobs one heartbeat reports (SQL record_progress
// takes at most 10,000): a worker that moved more jobs forward in one
// heartbeat interval leaves the rest out, and the next chunk of each is
// reported instead.
const maxProgress = 10000

// progress is what a worker saw of its jobs' progress since its last
// heartbeat: per job, the highest next_index a chunk of it committed, and
// when. The heartbeat hands it to SQL record_progress, which keeps each
// job's recent rate (job_progress).
type progress struct {
	mu   sync.Mutex
	seen map[string]point
}

type point struct {
	next int
	at   time.Time
}

// add records that a chunk of job committed, reaching next at at.
func (p *progress) add(job string, next int, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = map[string]point{}
	}
	old, ok := p.seen[job]
	switch {
	case !ok && len(p.seen) >= maxProgress:
	case !ok || next > old.next:
		p.seen[job] = point{next, at}
	}
}

// take empties the record and returns it; give it back with putBack if it
// could not be sent.
func (p *progress) take() map[string]point {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.seen
	p.seen = nil
	return seen
}

// putBack returns what take gave, keeping for each job the newer point.
func (p *progress) putBack(seen map[string]point) {
	for job, pt := range seen {
		p.add(job, pt.next, pt.at)
	}
}

// staleProgress is the age past which a point is left out of a heartbeat
// (one that could not be sent for that long tells nothing recent).
const staleProgress = time.Hour

// samples is seen as record_progress reads it: [{"job_id", "next_index",
// "ago_ms"}, ...], ago_ms measured from now, without the stale points.
func samples(seen map[string]point, now time.Time) ([]byte, error) {
	type sample struct {
		JobID     string `json:"job_id"`
		NextIndex int    `json:"next_index"`
		AgoMs     int64  `json:"ago_ms"`
	}
	out := make([]sample, 0, len(seen))
	for job, pt := range seen {
		if age := now.Sub(pt.at); age <= staleProgress {
			out = append(out, sample{job, pt.next, max(age.Milliseconds(), 0)})
		}
	}
	return json.Marshal(out)
}
