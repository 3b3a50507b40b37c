package bench

import (
	"slices"
	"testing"
	"time"
)

// TestSideBySideOrder: the two run A B, B A, A B, ..., and each round's
// ratio is A's chunks/s over B's whichever ran first.
func TestSideBySideOrder(t *testing.T) {
	var order []string
	run := func(name string, chunks int) measureFunc {
		return func() (sample, error) {
			order = append(order, name)
			return sample{chunks: chunks, elapsed: time.Second}, nil
		}
	}
	p, err := sideBySide("pair", "a", "b", 3, run("a", 30), run("b", 10))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "b", "a", "a", "b"}; !slices.Equal(order, want) {
		t.Errorf("ran %v, want %v", order, want)
	}
	if want := []float64{3, 3, 3}; !slices.Equal(p.Rounds, want) || p.Median != 3 {
		t.Errorf("rounds %v median %v, want %v and 3", p.Rounds, p.Median, want)
	}
	if _, err := sideBySide("pair", "a", "b", 1, run("a", 0), run("b", 10)); err == nil {
		t.Error("a round with nothing measured passed")
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{2}, 2}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
