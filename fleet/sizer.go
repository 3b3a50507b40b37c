package fleet

import (
	"cmp"
	"sync"
	"time"

	"github.com/chunks-dev/chunks/driver"
)

// DefaultChunkTime is a worker's default target time of one chunk
// ([Worker.ChunkTime]).
const DefaultChunkTime = 200 * time.Millisecond

// Sizer is a worker's adaptive chunk size (docs/fleet.md "Adaptive chunk
// size"), as GitLab's batch optimizer does: a declared change's plan
// approves a maximum chunk size, and the worker asks for smaller chunks
// (run_next_chunk's max_rows) while the database is under pressure or a
// chunk takes longer than its target time, then grows back:
//   - the pacer held a chunk (a standby too far behind, the throttle
//     query): the next chunks are at most half the last one;
//   - a chunk took longer than the target time: the next ones are cut in
//     proportion (a 1,000-row chunk of 400 ms against 200 ms: 500 rows);
//   - otherwise the cap grows by half (and at least one row) a chunk, until
//     it reaches [driver.MaxChangeChunkSize] and is dropped: the approved
//     size again.
//
// It is one cap for all the worker's passes and jobs: the pressure it
// answers is the database's, not one job's. An orders job's chunk is its
// chunk_size, whatever the cap (the contract); its chunks are not counted.
// Each chunk's size is on the record (change_chunks), so the checkpoint
// stays exact whatever the cap was. Safe for concurrent use.
type Sizer struct {
	target time.Duration // a chunk's target time; 0: only the pacer's pressure shrinks chunks

	mu    sync.Mutex
	limit int // the cap; 0: none (the approved chunk size)
}

// NewSizer returns a sizer with the target time of a chunk (0: none).
func NewSizer(target time.Duration) *Sizer { return &Sizer{target: target} }

// Rows is the cap to ask for: 0 for none.
func (s *Sizer) Rows() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit
}

// Held tells the sizer that the pacer held a chunk back: the next chunks
// are at most half the cap (or half the approved maximum, with no cap).
func (s *Sizer) Held() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = max(1, cmp.Or(s.limit, driver.MaxChangeChunkSize)/2)
}

// Ran tells the sizer that a chunk of a declared change of rows rows
// committed in took, and says the cap it set (0: none).
func (s *Sizer) Ran(rows int, took time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case rows <= 0:
	case s.target > 0 && took > s.target:
		s.limit = max(1, int(float64(rows)*float64(s.target)/float64(took)))
	case s.limit > 0:
		s.limit += max(1, s.limit/2)
		if s.limit >= driver.MaxChangeChunkSize {
			s.limit = 0
		}
	}
	return s.limit
}
