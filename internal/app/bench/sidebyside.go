package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Pair is two variants measured in turn on the same server: chunk by chunk
// where both run in this process (alternate), run by run where one is a
// worker process (sideBySide: A B, B A, A B, ...). A ratio of two scenarios
// measured one after the other moved with the machine between them (a
// commit ceiling of 890 to 5,594 commits/s on one machine in one day; the
// fleet's ratio to RunChunk from 0.7 to 1.5), where neighbours meet the
// same machine. The goal is the median of the rounds' ratios.
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
// Pair: for what cannot alternate chunk by chunk (worker processes). Each
// measurement prepares what it runs on before it starts timing.
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

// drainer runs chunk on one connection of its own, opened and warmed up
// once (a first job drained, so that the session's plans are made) and kept
// for every round.
type drainer struct {
	conn  *pgx.Conn
	seed  *seeder
	size  int
	chunk chunkFunc
	jobs  []string // what step runs next
	// paused registers its jobs paused in the queue: beside a worker
	// process, which would otherwise run them too.
	paused bool
	// change makes its jobs jobs of the bench's declared change
	// (seeder.changeJobs) instead of cancellations of orders.
	change bool
}

// newJobs registers n fresh jobs of dr's kind and size.
func (dr *drainer) newJobs(ctx context.Context, n int) ([]string, error) {
	if dr.change {
		return dr.seed.changeJobs(ctx, n, dr.size, false)
	}
	return dr.seed.register(ctx, n, dr.size, dr.paused)
}

func newDrainer(ctx context.Context, cfg *pgx.ConnConfig, seed *seeder, size int, chunk chunkFunc, change bool) (*drainer, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	dr := &drainer{conn: conn, seed: seed, size: size, chunk: chunk, change: change}
	if _, err := dr.drain(ctx, 1, time.Minute); err != nil {
		return nil, errors.Join(err, conn.Close(context.WithoutCancel(ctx)))
	}
	return dr, nil
}

// drain seeds n jobs, then drains them for at most d.
func (dr *drainer) drain(ctx context.Context, n int, d time.Duration) (sample, error) {
	jobs, err := dr.newJobs(ctx, n)
	if err != nil {
		return sample{}, err
	}
	return drainOn(ctx, dr.conn, nil, d, queue(jobs), dr.chunk)
}

// step runs one chunk of the first job of dr.jobs, timed, and moves on to
// the next job when that one is done.
func (dr *drainer) step(ctx context.Context, s *sample) error {
	if len(dr.jobs) == 0 {
		return errors.New("no job left to run")
	}
	t0 := time.Now()
	res, err := dr.chunk(ctx, dr.conn, dr.jobs[0])
	if err != nil {
		return fmt.Errorf("job %s: %w", dr.jobs[0], err)
	}
	took := time.Since(t0)
	s.latencies = append(s.latencies, took)
	s.elapsed += took
	s.chunks++
	s.orders += len(res.Processed)
	if res.Done {
		dr.jobs = dr.jobs[1:]
	}
	return nil
}

func (dr *drainer) close(ctx context.Context) error { return dr.conn.Close(context.WithoutCancel(ctx)) }

// alternate measures a and b chunk by chunk in turn, for d in all, split
// into rounds: one chunk of a, one of b, and so on, each on its own warm
// connection, so that both meet the same moments of the machine (a commit's
// fsync time moves from one second to the next). Each round seeds jobs for
// both first; each side's time is the sum of its own chunks' times, and the
// round's ratio is a's chunks/s over b's.
func alternate(ctx context.Context, name string, a, b *drainer, d time.Duration, rounds int) (Pair, error) {
	p := Pair{Name: name}
	each := d / time.Duration(rounds)
	for i := range rounds {
		for _, dr := range []*drainer{a, b} {
			jobs, err := dr.newJobs(ctx, jobsFor(each.Seconds(), dr.size, 1))
			if err != nil {
				return p, err
			}
			dr.jobs = jobs
		}
		var sa, sb sample
		for start := time.Now(); time.Since(start) < each; {
			if err := a.step(ctx, &sa); err != nil {
				return p, fmt.Errorf("%s, round %d: %w", name, i+1, err)
			}
			if err := b.step(ctx, &sb); err != nil {
				return p, fmt.Errorf("%s, round %d: %w", name, i+1, err)
			}
		}
		p.Rounds = append(p.Rounds, chunksPerS(sa)/chunksPerS(sb))
	}
	p.Median = median(p.Rounds)
	return p, nil
}

// inProcessPairs measures the in-process goals chunk by chunk, side by side
// (alternate), for d each: RunChunk against the baseline script at sizes 1
// and 10 and against the floor at size 10 (issue 26), and the built-in
// cancellation against a declared change at sizes 1 and 10 (issue 25: its
// ratio is the declared change's time per chunk over the built-in's).
func inProcessPairs(ctx context.Context, cfg *pgx.ConnConfig, seed *seeder, d time.Duration, rounds int, logf func(string, ...any)) (pairs []Pair, err error) {
	for _, c := range []struct {
		name, a, b string
		size       int
		other      chunkFunc
		change     bool // b is the declared change (a RunChunk of its jobs)
	}{
		{"RunChunk vs the baseline script, size 1", "RunChunk, size 1", "baseline, size 1", 1, baselineChunk, false},
		{"RunChunk vs the baseline script, size 10", "RunChunk, size 10", "baseline, size 10", 10, baselineChunk, false},
		{"RunChunk (size 10) vs the floor", "RunChunk, size 10", "floor, size 10", 10, floorChunk, false},
		{"the declared change vs the built-in cancellation, size 1 (its time per chunk over the built-in's)",
			"built-in, size 1", "declared, size 1", 1, runChunk, true},
		{"the declared change vs the built-in cancellation, size 10 (its time per chunk over the built-in's)",
			"built-in, size 10", "declared, size 10", 10, runChunk, true},
	} {
		logf("side by side: %s, chunk by chunk in turn, %d rounds, %v in all", c.name, rounds, d)
		a, err := newDrainer(ctx, cfg, seed, c.size, runChunk, false)
		if err != nil {
			return pairs, err
		}
		b, err := newDrainer(ctx, cfg, seed, c.size, c.other, c.change)
		if err != nil {
			return pairs, errors.Join(err, a.close(ctx))
		}
		p, err := alternate(ctx, c.name, a, b, d, rounds)
		if err = errors.Join(err, a.close(ctx), b.close(ctx)); err != nil {
			return pairs, err
		}
		p.A, p.B = c.a, c.b
		pairs = append(pairs, p)
	}
	return pairs, nil
}

// sideBySideRounds is how many rounds each Pair runs.
const sideBySideRounds = 5

// rounds is how many rounds each Pair of a run of scenarios of duration d
// runs: sideBySideRounds, or 3 for a smoke run (under a second), which
// checks that every pair runs, not what it measures.
func rounds(d time.Duration) int {
	if d < time.Second {
		return 3
	}
	return sideBySideRounds
}
