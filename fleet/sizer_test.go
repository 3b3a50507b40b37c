package fleet

import (
	"slices"
	"testing"
	"time"
)

// The adaptive size: cut in proportion to a slow chunk, halved by a hold,
// grown back by half a chunk at a time until the cap is dropped.
func TestSizer(t *testing.T) {
	s := NewSizer(200 * time.Millisecond)
	if got := s.Rows(); got != 0 {
		t.Fatalf("a new sizer caps at %d, want 0 (none)", got)
	}
	if got := s.Ran(1000, 100*time.Millisecond); got != 0 {
		t.Fatalf("a quick chunk with no cap: %d, want 0", got)
	}
	if got := s.Ran(1000, 400*time.Millisecond); got != 500 {
		t.Fatalf("a 1,000-row chunk of 400 ms against 200 ms: cap %d, want 500", got)
	}
	s.Held()
	if got := s.Rows(); got != 250 {
		t.Fatalf("a hold at 500: cap %d, want 250", got)
	}
	var steps []int
	for s.Rows() != 0 {
		steps = append(steps, s.Ran(s.Rows(), 50*time.Millisecond))
		if len(steps) > 20 {
			t.Fatalf("the cap does not go away: %v", steps)
		}
	}
	if want := []int{375, 562, 843, 0}; !slices.Equal(steps, want) {
		t.Fatalf("growing back: %v, want %v", steps, want)
	}
	s.Held()
	if got := s.Rows(); got != 500 {
		t.Fatalf("a hold with no cap: %d, want half of 1,000", got)
	}
	for i := 0; i < 12; i++ {
		s.Held()
	}
	if got := s.Rows(); got != 1 {
		t.Fatalf("holds bottom out at %d, want 1", got)
	}
	if got := s.Ran(1, time.Second); got != 1 {
		t.Fatalf("a slow chunk of one row: cap %d, want 1", got)
	}
	if got := s.Ran(0, time.Second); got != 1 {
		t.Fatalf("a chunk of no rows changes nothing: cap %d, want 1", got)
	}
}
