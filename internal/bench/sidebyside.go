package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Pair is two variants measured in turn, round after round, on the same
// server: a ratio of two scenarios measured one after the other moved with
// the machine's speed between them (a ceiling of 1,535 to 5,594 commits/s
// on one machine in one day, and the fleet's ratio to RunChunk between 0.9
// and 1.5), where each round's ratio of two neighbours does not. The order
// is A B, B A, A B, ..., so that a drift within a round favours neither, and
// the goal is the median of the rounds' ratios.
type Pair struct {
	Name   string    `json:"name"`   // "RunChunk (size 10) vs the floor"
	A      string    `json:"a"`      // the variant measured
	B      string    `json:"b"`      // its reference
	Rounds []float64 `json:"rounds"` // A's chunks/s over B's, round by round
	Median float64   `json:"median"`
}

// measureFunc runs one variant once and returns what it measured.
type measureFunc func() (sample, error)

// sideBySide measures a and b in turn, rounds times each, and returns their
// Pair. Each measurement prepares what it runs on before it starts timing.
func sideBySide(name, aName, bName string, rounds int, a, b measureFunc) (Pair, error) {
	p := Pair{Name: name, A: aName, B: bName}
	for i := range rounds {
		first, second := a, b
		if i%2 == 1 {
			first, second = b, a
		}
		x, err := first()
		if err != nil {
			return p, fmt.Errorf("%s, round %d: %w", name, i+1, err)
		}
		y, err := second()
		if err != nil {
			return p, fmt.Errorf("%s, round %d: %w", name, i+1, err)
		}
		if i%2 == 1 {
			x, y = y, x
		}
		if x.chunks == 0 || y.chunks == 0 || x.elapsed <= 0 || y.elapsed <= 0 {
			return p, fmt.Errorf("%s, round %d: nothing measured (%d and %d chunks)", name, i+1, x.chunks, y.chunks)
		}
		p.Rounds = append(p.Rounds, chunksPerS(x)/chunksPerS(y))
	}
	p.Median = median(p.Rounds)
	return p, nil
}

func chunksPerS(s sample) float64 { return float64(s.chunks) / s.elapsed.Seconds() }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// drainer measures chunk on one connection of its own, opened and warmed up
// once (a first job drained, so that the session's plans are made) and
// kept for every round: each measurement drains fresh jobs of size for d.
type drainer struct {
	conn  *pgx.Conn
	seed  *seeder
	size  int
	d     time.Duration
	chunk chunkFunc
}

func newDrainer(ctx context.Context, cfg *pgx.ConnConfig, seed *seeder, size int, d time.Duration, chunk chunkFunc) (*drainer, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	dr := &drainer{conn: conn, seed: seed, size: size, d: d, chunk: chunk}
	if _, err := dr.drain(ctx, 1, time.Minute); err != nil {
		return nil, errors.Join(err, conn.Close(context.WithoutCancel(ctx)))
	}
	return dr, nil
}

// measure drains fresh jobs, as many as d can use, for d.
func (dr *drainer) measure(ctx context.Context) measureFunc {
	return func() (sample, error) {
		return dr.drain(ctx, jobsFor(dr.d.Seconds(), dr.size, 1), dr.d)
	}
}

// drain seeds n jobs, then drains them for at most d.
func (dr *drainer) drain(ctx context.Context, n int, d time.Duration) (sample, error) {
	jobs, err := dr.seed.jobs(ctx, n, dr.size)
	if err != nil {
		return sample{}, err
	}
	return drainOn(ctx, dr.conn, nil, d, queue(jobs), dr.chunk)
}

func (dr *drainer) close(ctx context.Context) error { return dr.conn.Close(context.WithoutCancel(ctx)) }

// inProcessPairs measures issue 26's in-process goals side by side: RunChunk
// against the baseline script at sizes 1 and 10, and against the floor at
// size 10. Each measurement runs for half of d.
func inProcessPairs(ctx context.Context, cfg *pgx.ConnConfig, seed *seeder, d time.Duration, rounds int, logf func(string, ...any)) (pairs []Pair, err error) {
	half := d / 2
	for _, c := range []struct {
		name, other string
		size        int
		chunk       chunkFunc
	}{
		{"RunChunk vs the baseline script, size 1", "baseline, size 1", 1, baselineChunk},
		{"RunChunk vs the baseline script, size 10", "baseline, size 10", 10, baselineChunk},
		{"RunChunk (size 10) vs the floor", "floor, size 10", 10, floorChunk},
	} {
		logf("side by side: %s, %d rounds of %v each", c.name, rounds, half)
		a, err := newDrainer(ctx, cfg, seed, c.size, half, runChunk)
		if err != nil {
			return pairs, err
		}
		b, err := newDrainer(ctx, cfg, seed, c.size, half, c.chunk)
		if err != nil {
			return pairs, errors.Join(err, a.close(ctx))
		}
		p, err := sideBySide(c.name, fmt.Sprintf("RunChunk, size %d", c.size), c.other, rounds, a.measure(ctx), b.measure(ctx))
		if err = errors.Join(err, a.close(ctx), b.close(ctx)); err != nil {
			return pairs, err
		}
		pairs = append(pairs, p)
	}
	return pairs, nil
}

// sideBySideRounds is how many rounds each Pair runs.
const sideBySideRounds = 5
