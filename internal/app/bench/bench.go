// Package bench measures chunks against the commit ceiling of the server and
// against a client-side baseline, all in one run on one server so that the
// ratios hold on a noisy machine. chunks bench prints its Report.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/wire"
)

// Options says what to measure and where.
type Options struct {
	Conn     *pgx.ConnConfig // the database; the benchmark works in new schemas and drops them
	Duration time.Duration   // how long each scenario runs
	Delay    time.Duration   // the network scenario's added delay, each way
	Scale    bool            // run the scale scenario (1,000,000 orders, 10,000 jobs)
	// Scenarios names the scenarios to run, from [Scenarios]; empty: all.
	// The check that the baseline and the floor are equivalent always runs.
	Scenarios []string
	Chunks    string    // the chunks binary, for drain's peak memory ("" skips it)
	Log       io.Writer // progress lines
	// StartStandby, when set, starts a streaming standby of the server (no
	// apply delay) for the pacing scenario and returns its stop.
	StartStandby func(ctx context.Context) (stop func() error, err error)
	// Checkpoint runs CHECKPOINT before each counted scenario, so that
	// each one starts at a checkpoint and pays its own full-page images
	// (WAL per chunk compares across scenarios). Only on a server the
	// bench owns: it needs pg_checkpoint or superuser.
	Checkpoint bool
}

// Scenarios are the names Options.Scenarios may hold, in the order they run.
var Scenarios = []string{"ceiling", "chunks", "floor", "declared change", "baseline", "side by side", "network",
	"parallel", "campaign", "fleet", "loop", "application", "pacing", "scale", "memory"}

// ValidScenarios refuses a name that is not one of [Scenarios], naming the field.
func ValidScenarios(names []string) error {
	for _, name := range names {
		if !slices.Contains(Scenarios, name) {
			return driver.Invalidf("scenario: no scenario is called %q; the scenarios are %s", name, strings.Join(Scenarios, ", "))
		}
	}
	return nil
}

// Report is every figure of one run.
type Report struct {
	Date            string            `json:"date"`
	CPU             string            `json:"cpu"`
	Server          string            `json:"server"`
	Settings        map[string]string `json:"settings"`
	Equivalent      bool              `json:"baseline_equivalent"`
	FloorEquivalent bool              `json:"floor_equivalent"`    // the floor leaves what RunChunk leaves too
	Scenarios       []string          `json:"scenarios,omitempty"` // those asked for; empty: all
	Results         []Result          `json:"results"`
	Ratios          []Ratio           `json:"ratios"`
	// Pairs are the goals measured side by side (issue 26): two variants
	// in turn, round after round, the goal their median ratio.
	Pairs          []Pair  `json:"pairs"`
	DrainPeakRSSMB float64 `json:"drain_peak_rss_mb,omitempty"`
}

// Ratio is one of the goals, measured.
type Ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Goal  string  `json:"goal"`
	Met   bool    `json:"met"`
}

// Run measures the scenarios o names (every one when it names none).
func Run(ctx context.Context, o Options) (r Report, err error) {
	if err := ValidScenarios(o.Scenarios); err != nil {
		return r, err
	}
	runs := func(name string) bool { return len(o.Scenarios) == 0 || slices.Contains(o.Scenarios, name) }
	admin, err := pgx.ConnectConfig(ctx, o.Conn)
	if err != nil {
		return r, err
	}
	defer closeConn(ctx, admin, &err)
	r = Report{Date: time.Now().UTC().Format("2006-01-02 15:04 MST"), CPU: cpuModel(), Settings: map[string]string{}, Scenarios: o.Scenarios}
	if err := admin.QueryRow(ctx, "select version()").Scan(&r.Server); err != nil {
		return r, err
	}
	for _, name := range []string{"fsync", "synchronous_commit", "full_page_writes", "wal_level", "shared_buffers", "checkpoint_timeout", "max_wal_size"} {
		var v string
		if err := admin.QueryRow(ctx, "select current_setting($1)", name).Scan(&v); err != nil {
			return r, err
		}
		r.Settings[name] = v
	}

	schema := "chunks_bench_" + randomHex()
	cfg, seed, drop, err := newSchema(ctx, admin, o.Conn, schema)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, drop()) }()
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	d := o.Duration
	add := func(res Result) { r.Results = append(r.Results, res) }
	pair := func(p Pair) { r.Pairs = append(r.Pairs, p) }

	logf("checking that the baseline and the floor leave exactly what RunChunk leaves")
	if r.Equivalent, err = equivalent(ctx, cfg, seed, baselineChunk); err != nil {
		return r, err
	}
	if r.FloorEquivalent, err = equivalent(ctx, cfg, seed, floorChunk); err != nil {
		return r, err
	}
	if !r.Equivalent || !r.FloorEquivalent {
		return r, fmt.Errorf("the baseline (same: %t) or the floor (same: %t) does not leave the same orders and audit as RunChunk",
			r.Equivalent, r.FloorEquivalent)
	}

	ceilingFirst, err := seed.filler(ctx, 10000)
	if err != nil {
		return r, err
	}
	// counted runs a scenario between two readings of the server's commit
	// and WAL counters: after a checkpoint when o.Checkpoint, then prepare
	// (the seeding, which is not the scenario's WAL or commits; it takes the
	// full-page images of the pages it writes after the checkpoint).
	counted := func(prepare func() error, run func() (Result, error)) error {
		if o.Checkpoint {
			if _, err := admin.Exec(ctx, "checkpoint"); err != nil {
				return err
			}
		}
		if prepare != nil {
			if err := prepare(); err != nil {
				return err
			}
		}
		before, err := readCounters(ctx, admin)
		if err != nil {
			return err
		}
		res, err := run()
		if err != nil {
			return err
		}
		after, err := readCounters(ctx, admin)
		if err != nil {
			return err
		}
		perChunk(&res, before, after)
		add(res)
		return nil
	}
	// drained is a counted scenario draining new jobs of size on one connection with chunk.
	drained := func(scenario, variant string, size int, chunk chunkFunc) error {
		var jobs []string
		return counted(func() (err error) {
			jobs, err = seed.jobs(ctx, jobsFor(d.Seconds(), size, 1), size)
			return err
		}, func() (Result, error) {
			s, err := parallel(ctx, cfg, d, 1, jobs, chunk)
			return s.result(scenario, variant, true), err
		})
	}

	steps := []struct {
		name string
		run  func() error
	}{
		{"ceiling", func() error {
			logf("ceiling: single-row UPDATE transactions for %v", d)
			return counted(nil, func() (Result, error) {
				s, err := ceiling(ctx, cfg, d, ceilingFirst, 10000)
				return s.result("ceiling", "1 conn", true), err
			})
		}},
		{"chunks", func() error {
			for _, size := range []int{1, 5, 10} {
				logf("chunks: RunChunk, chunk size %d, for %v", size, d)
				if err := drained("chunks", fmt.Sprintf("size %d", size), size, runChunk); err != nil {
					return err
				}
			}
			logf("chunks: RunChunk with a fault hook that does nothing, chunk size 10, for %v", d)
			res, err := measureChunks(ctx, cfg, seed, d, 10, 1, runChunkWithHooks)
			if err != nil {
				return err
			}
			add(res.result("chunks", "size 10, with a fault hook", true))
			return nil
		}},
		{"floor", func() error {
			logf("floor: the writes of a RunChunk of size 10 in one statement, no checks, for %v", d)
			return drained("floor", "size 10, one statement, no checks", 10, floorChunk)
		}},
		{"declared change", func() error {
			for _, size := range []int{1, 10} {
				logf("declared change: the built-in cancellation, then a declared change of a table of the same shape, chunk size %d, for %v each", size, d)
				builtin, err := measureChunks(ctx, cfg, seed, d, size, 1, runChunk)
				if err != nil {
					return err
				}
				add(builtin.result("declared change", fmt.Sprintf("built-in, size %d", size), true))
				jobs, err := seed.changeJobs(ctx, jobsFor(d.Seconds(), size, 1), size, false)
				if err != nil {
					return err
				}
				declared, err := parallel(ctx, cfg, d, 1, jobs, runChunk)
				if err != nil {
					return err
				}
				add(declared.result("declared change", fmt.Sprintf("declared, size %d", size), true))
				// The same rows deleted, each archived (issue 39).
				if jobs, err = seed.jobsOfChange(ctx, deleteName, jobsFor(d.Seconds(), size, 1), targetsPerJob, size, false); err != nil {
					return err
				}
				deleted, err := parallel(ctx, cfg, d, 1, jobs, runChunk)
				if err != nil {
					return err
				}
				add(deleted.result("declared change", fmt.Sprintf("delete, archived, size %d", size), true))
			}
			return nil
		}},
		{"baseline", func() error {
			for _, size := range []int{1, 10} {
				logf("baseline: statement by statement, chunk size %d, for %v", size, d)
				if err := drained("baseline", fmt.Sprintf("size %d", size), size, baselineChunk); err != nil {
					return err
				}
			}
			return nil
		}},
		{"side by side", func() error {
			pairs, err := inProcessPairs(ctx, cfg, seed, d, rounds(d), logf)
			r.Pairs = append(r.Pairs, pairs...)
			return err
		}},
		{"network", func() error {
			logf("network: through a proxy adding %v each way", o.Delay)
			return network(ctx, cfg, seed, o.Delay, d, ceilingFirst, add)
		}},
		{"parallel", func() error {
			for _, n := range []int{1, 2, 4, 8} {
				logf("parallel: %d workers on distinct jobs, chunk size 10", n)
				jobs, err := seed.jobs(ctx, jobsFor(d.Seconds(), 10, n), 10)
				if err != nil {
					return err
				}
				res, err := parallel(ctx, cfg, d, n, jobs, runChunk)
				if err != nil {
					return err
				}
				add(res.result("parallel", fmt.Sprintf("%d workers, distinct jobs", n), false))
			}
			for _, n := range []int{2, 4} {
				logf("parallel: %d workers on the same job, chunk size 1", n)
				jobs, err := seed.jobs(ctx, jobsFor(d.Seconds(), 1, 1), 1)
				if err != nil {
					return err
				}
				res, err := sameJob(ctx, cfg, d, n, jobs)
				if err != nil {
					return err
				}
				add(res.result("parallel", fmt.Sprintf("%d workers, same job", n), false))
			}
			return nil
		}},
		{"campaign", func() error {
			campaignTargets := 100000
			if d < time.Second {
				campaignTargets = 2000 // a smoke run
			}
			logf("campaign: create, status and report of %d targets, against one register per job", campaignTargets)
			return campaigns(ctx, cfg, seed, campaignTargets, add)
		}},
		{"fleet", func() error {
			if o.Chunks == "" {
				return nil
			}
			return fleetScenarios(ctx, admin, o, logf, counted, pair)
		}},
		{"loop", func() error {
			if o.Chunks == "" {
				return nil
			}
			for _, size := range loopSizes {
				logf("loop: a declared change's jobs, 2 worker processes, against the DBA's loop on 2 connections, chunk and batch %d, %d rounds", size, rounds(d))
				ps, err := loopPairs(ctx, admin, o, rounds(d), size, add)
				for _, p := range ps {
					pair(p)
				}
				if err != nil {
					return err
				}
			}
			return nil
		}},
		{"application", func() error {
			if o.Chunks == "" {
				return nil
			}
			return applicationScenario(ctx, admin, o, rounds(d), logf, add, pair)
		}},
		{"pacing", func() error {
			if o.Chunks == "" || o.StartStandby == nil {
				return nil
			}
			return pacingScenario(ctx, admin, o, logf, add, pair)
		}},
		{"scale", func() error {
			if !o.Scale {
				return nil
			}
			return scale(ctx, admin, o.Conn, logf, add)
		}},
		{"memory", func() error {
			if o.Chunks == "" {
				return nil
			}
			logf("drain: peak memory of a chunks drain process")
			peak, err := drainMemory(ctx, o, schema, seed)
			r.DrainPeakRSSMB = peak
			return err
		}},
	}
	for _, step := range steps {
		if !runs(step.name) {
			continue
		}
		if err := step.run(); err != nil {
			return r, fmt.Errorf("%s: %w", step.name, err)
		}
	}
	r.Ratios = ratios(r)
	return r, nil
}

// newSchema installs chunks into schema and returns a connection config on
// it, a seeder and the function that drops it again.
func newSchema(ctx context.Context, admin *pgx.Conn, base *pgx.ConnConfig, schema string) (*pgx.ConnConfig, *seeder, func() error, error) {
	if err := driver.Migrate(ctx, admin, schema, driver.MigrateOptions{}); err != nil {
		return nil, nil, nil, err
	}
	shop := schema + "_shop" // the declared change's table (seeder.changeJobs)
	drop := func() error {
		_, err := admin.Exec(context.WithoutCancel(ctx), "drop schema if exists "+pgx.Identifier{shop}.Sanitize()+" cascade; drop schema "+
			pgx.Identifier{schema}.Sanitize()+" cascade")
		return err
	}
	cfg := base.Copy()
	cfg.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, nil, nil, errors.Join(err, drop())
	}
	return cfg, &seeder{conn: conn, tenant: "bench", nextID: 1, shop: shop}, func() error {
		return errors.Join(conn.Close(context.WithoutCancel(ctx)), drop())
	}, nil
}

// measureChunks drains freshly seeded jobs with chunk on one connection.
func measureChunks(ctx context.Context, cfg *pgx.ConnConfig, seed *seeder, d time.Duration, size, workers int, chunk chunkFunc) (sample, error) {
	jobs, err := seed.jobs(ctx, jobsFor(d.Seconds(), size, workers), size)
	if err != nil {
		return sample{}, err
	}
	return parallel(ctx, cfg, d, workers, jobs, chunk)
}

// equivalent drains one job with RunChunk and an identical one with other
// (the baseline, the floor), and compares the orders and audit they leave
// (ids shifted).
func equivalent(ctx context.Context, cfg *pgx.ConnConfig, seed *seeder, other chunkFunc) (bool, error) {
	var jobs [2]string
	var first [2]int64
	for i, chunk := range []chunkFunc{runChunk, other} {
		first[i] = seed.nextID
		ids, err := seed.jobs(ctx, 1, 3)
		if err != nil {
			return false, err
		}
		jobs[i] = ids[0]
		if _, err := drainFor(ctx, cfg, time.Minute, queue(ids), chunk); err != nil {
			return false, err
		}
	}
	var same bool
	err := seed.conn.QueryRow(ctx, `
		with o as (select o.id >= $4 as b, jsonb_agg(jsonb_build_array(o.id - case when o.id >= $4 then $4 else $3 end,
		                                                  o.tenant, o.qty, o.state, o.revision) order by o.id) as rows
		             from orders as o where o.id between $3 and $3 + 63 or o.id between $4 and $4 + 63 group by 1),
		     a as (select a.job_id = $2 as b, count(*) as n,
		                  jsonb_agg(jsonb_build_array(a.ordinal, a.id - case when a.job_id = $2 then $4 else $3 end,
		                                              a.previous_revision, a.new_revision, a.qty) order by a.ordinal) as rows
		             from job_audit as a where a.job_id in ($1, $2) group by 1)
		select (select rows from o where not b) = (select rows from o where b)
		   and (select rows from a where not b) = (select rows from a where b)
		   and (select n from a where not b) = 64`, jobs[0], jobs[1], first[0], first[1]).Scan(&same)
	return same, err
}

// network repeats the ceiling, chunks and baseline through a delaying proxy.
func network(ctx context.Context, cfg *pgx.ConnConfig, seed *seeder, delay, d time.Duration, ceilingFirst int64, add func(Result)) (err error) {
	proxy := &wire.Proxy{Delay: delay, Target: fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)}
	if err := proxy.Listen(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, proxy.Close()) }()
	via := cfg.Copy()
	via.Host, via.Port = "127.0.0.1", proxy.Port()
	via.Fallbacks = nil
	variant := fmt.Sprintf("+%v each way", delay)
	s, err := ceiling(ctx, via, d, ceilingFirst, 10000)
	if err != nil {
		return err
	}
	add(s.result("network ceiling", variant, true))
	for _, m := range []struct {
		name  string
		chunk chunkFunc
	}{{"network chunks", runChunk}, {"network baseline", baselineChunk}} {
		s, err := measureChunks(ctx, via, seed, d, 10, 1, m.chunk)
		if err != nil {
			return err
		}
		add(s.result(m.name, "size 10, "+variant, true))
	}
	return nil
}

// fleetScenarios measures chunks worker processes in a schema of their own
// (so no job left over by another scenario is in their queue).
func fleetScenarios(ctx context.Context, admin *pgx.Conn, o Options, logf func(string, ...any),
	counted func(func() error, func() (Result, error)) error, pair func(Pair)) (err error) {
	schema := "chunks_bench_fleet_" + randomHex()
	cfg, seed, drop, err := newSchema(ctx, admin, o.Conn, schema)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, drop()) }()
	for _, m := range []struct {
		variant string
		poll    time.Duration
		jobs    int
		notify  bool
	}{{"NOTIFY (workers poll every 30s)", 30 * time.Second, 30, true}, {"poll every 1s only (no NOTIFY sent)", time.Second, 8, false}} {
		if o.Duration < time.Second {
			m.jobs = 2 // a smoke run: each job without NOTIFY waits up to a poll
		}
		logf("fleet: pickup latency, %s", m.variant)
		stop, err := workers(ctx, o, schema, 1, m.poll)
		if err != nil {
			return err
		}
		if err := counted(nil, func() (Result, error) {
			s, err := pickup(ctx, seed.conn, seed, m.jobs, m.notify)
			return s.result("fleet pickup", m.variant, false), errors.Join(err, stop())
		}); err != nil {
			return err
		}
	}
	logf("fleet: takeover after a worker is killed inside a chunk")
	trials := 5
	if o.Duration < time.Second {
		trials = 1 // a smoke run
	}
	if err := counted(nil, func() (Result, error) {
		s, err := takeover(ctx, o, seed.conn, schema, seed, trials)
		return s.result("fleet takeover", "SIGKILL inside a 300 ms chunk, to the next chunk by another worker", false), err
	}); err != nil {
		return err
	}
	jobs := jobsFor(o.Duration.Seconds(), 10, 1) / 2 // the fleet runs about half as many chunks as RunChunk can
	for _, n := range []int{1, 2, 4} {
		logf("fleet: %d worker processes over %d jobs", n, jobs)
		stop, err := workers(ctx, o, schema, n, time.Second)
		if err != nil {
			return err
		}
		// Counted from before the run to after the workers stopped (their
		// counts reach the server when they exit).
		var ids []string
		if err := counted(func() (err error) {
			ids, err = seed.register(ctx, jobs, 10, true)
			return err
		}, func() (Result, error) {
			s, err := throughput(ctx, seed.conn, ids, 20*time.Millisecond)
			return s.result("fleet", fmt.Sprintf("%d worker processes, %d jobs of 64 (chunk 10)", n, jobs), false),
				errors.Join(err, stop())
		}); err != nil {
			return err
		}
	}
	logf("side by side: one worker process vs RunChunk, %d rounds", rounds(o.Duration))
	p, err := fleetPair(ctx, o, cfg, schema, seed, rounds(o.Duration))
	if err != nil {
		return err
	}
	pair(p)
	return nil
}

// pacingScenario measures what --max-replica-lag costs when nothing
// throttles: one worker process with the check and one without, against a
// server with one caught-up streaming standby, side by side: each in a
// schema of its own, started and warmed up once, and in each round both
// drain the same number of fresh jobs in turn (the other one idle).
func pacingScenario(ctx context.Context, admin *pgx.Conn, o Options, logf func(string, ...any), add func(Result), pair func(Pair)) (err error) {
	stopStandby, err := o.StartStandby(ctx)
	if err != nil {
		return fmt.Errorf("pacing: start a standby: %w", err)
	}
	defer func() { err = errors.Join(err, stopStandby()) }()
	jobs := jobsFor(o.Duration.Seconds(), 10, 1) / 4
	variants := []struct {
		name  string
		extra []string
	}{{"1 worker process, --max-replica-lag 1s", []string{"--max-replica-lag", "1s"}}, {"1 worker process, no check", nil}}
	var runs [2]measureFunc
	var samples [2]sample
	for k, v := range variants {
		schema := "chunks_bench_pacing_" + randomHex()
		_, seed, drop, err := newSchema(ctx, admin, o.Conn, schema)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, drop()) }()
		stop, err := workers(ctx, o, schema, 1, time.Second, v.extra...)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
		run := func(n int) (sample, error) {
			ids, err := seed.register(ctx, n, 10, true)
			if err != nil {
				return sample{}, err
			}
			return throughput(ctx, seed.conn, ids, 2*time.Millisecond)
		}
		if _, err := run(max(1, jobs/10)); err != nil { // the worker's sessions make their plans
			return err
		}
		runs[k] = func() (sample, error) {
			s, err := run(jobs)
			samples[k].chunks += s.chunks // one run after the other: times add up
			samples[k].orders += s.orders
			samples[k].elapsed += s.elapsed
			return s, err
		}
	}
	logf("pacing: 1 worker process with --max-replica-lag 1s and one without, side by side, %d rounds of %d jobs, a caught-up standby", rounds(o.Duration), jobs)
	p, err := sideBySide("the replica lag check, nothing throttling: with it vs without", variants[0].name, variants[1].name,
		rounds(o.Duration), runs[0], runs[1])
	if err != nil {
		return err
	}
	pair(p)
	for k := range variants {
		k = len(variants) - 1 - k // the row without the check first, as before
		add(samples[k].result("pacing", variants[k].name, false))
	}
	return nil
}

// scale compares the per-chunk cost in a schema of 10 jobs with one of
// 10,000 registered jobs and 1,000,000 orders. The two schemas' chunks are
// run alternately, one each in turn, so that neither gets a warmer cache or
// a quieter machine than the other.
func scale(ctx context.Context, admin *pgx.Conn, base *pgx.ConnConfig, logf func(string, ...any), add func(Result)) (err error) {
	const perRun = 10 // jobs drained in each schema, chunk size 1: 640 chunks
	variants := []string{"10 jobs", "10,000 jobs, 1,000,000 orders"}
	var conns [2]*pgx.Conn
	var jobs [2][]string
	for k := range variants {
		cfg, seed, drop, err := newSchema(ctx, admin, base, "chunks_bench_scale_"+randomHex())
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, drop()) }()
		if k == 1 {
			logf("scale: seeding %s", variants[k])
			if _, err := seed.jobs(ctx, 10000-perRun, 1); err != nil {
				return err
			}
			if _, err := seed.filler(ctx, 1000000-10000*targetsPerJob); err != nil {
				return err
			}
		}
		if jobs[k], err = seed.jobs(ctx, perRun, 1); err != nil {
			return err
		}
		if conns[k], _, err = connect(ctx, cfg); err != nil {
			return err
		}
		defer closeConn(ctx, conns[k], &err)
	}
	logf("scale: 10 jobs against 10,000 jobs, chunk by chunk in turn")
	var samples [2]sample
	for i := range perRun {
		for done := false; !done; {
			for k := range variants {
				t0 := time.Now()
				res, err := driver.RunChunk(ctx, conns[k], jobs[k][i], nil)
				if err != nil {
					return err
				}
				took := time.Since(t0)
				samples[k].latencies = append(samples[k].latencies, took)
				samples[k].elapsed += took // each variant's own time, not the other's
				samples[k].chunks++
				samples[k].orders += len(res.Processed)
				done = res.Done
			}
		}
	}
	for k, v := range variants {
		add(samples[k].result("scale", v, false))
	}
	return nil
}

// drainMemory runs chunks drain on a job as a child process and returns its
// peak resident memory (its own: [peakRSS]).
func drainMemory(ctx context.Context, o Options, schema string, seed *seeder) (float64, error) {
	jobs, err := seed.jobs(ctx, 1, 1)
	if err != nil {
		return 0, err
	}
	mb, out, err := peakRSS(child(ctx, o, schema, "drain", "--json", jobs[0]))
	if err != nil {
		return 0, fmt.Errorf("chunks drain: %w\n%s", err, out)
	}
	return mb, nil
}

func ratios(r Report) []Ratio {
	get := func(scenario, variant string) Result {
		for _, x := range r.Results {
			if x.Scenario == scenario && strings.HasPrefix(x.Variant, variant) {
				return x
			}
		}
		return Result{}
	}
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	var out []Ratio
	ratio := func(name string, v float64, goal string, met bool) {
		if v == 0 && len(r.Scenarios) > 0 {
			return // a scenario it needs was not asked for
		}
		out = append(out, Ratio{Name: name, Value: v, Goal: goal, Met: met})
	}
	// side is the median of the named Pair's rounds (0 when it did not run).
	side := func(name string) float64 {
		for _, p := range r.Pairs {
			if p.Name == name {
				return p.Median
			}
		}
		return 0
	}
	v := div(get("chunks", "size 10").OrdersPerS, get("chunks", "size 1").OrdersPerS)
	ratio("orders/s, chunk size 10 vs 1", v, ">= 5", v >= 5)
	v = div(get("chunks", "size 10").ChunksPerS, get("ceiling", "").ChunksPerS)
	ratio("chunks/s (size 10) vs the commit ceiling's tx/s", v, ">= 0.5", v >= 0.5)
	v = side("RunChunk vs the baseline script, size 1")
	ratio("chunks vs baseline, chunks/s, no delay, size 1", v, ">= 1.5", v >= 1.5)
	v = side("RunChunk vs the baseline script, size 10")
	ratio("chunks vs baseline, chunks/s, no delay, size 10", v, ">= 2", v >= 2)
	floor := get("floor", "size 10")
	// RunChunk against the floor is a pair with no goal: issue 37 retired
	// "0.8 x the floor" (the seed contract's per-chunk check costs the rest).
	v = div(get("chunks", "size 10").WALBytesPerChunk, floor.WALBytesPerChunk)
	ratio("WAL bytes per chunk, chunks (size 10) vs the floor", v, "<= 1.5", v > 0 && v <= 1.5)
	v = div(get("network chunks", "").ChunksPerS, get("network baseline", "").ChunksPerS)
	ratio("chunks vs baseline, chunks/s, with the network delay", v, ">= 8", v >= 8)
	one := get("parallel", "1 workers").ChunksPerS
	for _, n := range []string{"2", "4", "8"} {
		v = div(get("parallel", n+" workers, distinct").ChunksPerS, one)
		ratio(n+" workers vs 1, distinct jobs", v, "grows until the server's CPU is the limit", v > 1)
	}
	if small, big := get("scale", "10 jobs"), get("scale", "10,000"); small.Chunks > 0 && big.Chunks > 0 {
		v = div(big.MeanMs, small.MeanMs)
		ratio("per-chunk time, 10,000 jobs vs 10 jobs", v, "<= 1.10", v <= 1.10)
	}
	if tk := get("fleet takeover", ""); tk.Chunks > 0 {
		ratio("fleet: takeover after a killed worker, p50 ms", tk.P50Ms, "< 1000", tk.P50Ms < 1000)
	}
	if p := get("fleet pickup", "NOTIFY"); p.Chunks > 0 {
		ratio("fleet pickup p50 with NOTIFY, ms", p.P50Ms, "< 10", p.P50Ms < 10)
	}
	v = div(get("network chunks", "").ChunksPerS, get("network ceiling", "").ChunksPerS)
	ratio("chunks vs the ceiling, chunks/s, with the network delay", v, ">= 0.85", v >= 0.85)
	if fleet := get("fleet", "1 worker"); fleet.ChunksPerS > 0 {
		v = side("one worker process vs RunChunk (size 10), the same number of jobs")
		ratio("fleet (1 worker process) vs RunChunk, chunks/s, same jobs", v, ">= 0.95", v >= 0.95)
		v = div(fleet.WALBytesPerChunk, floor.WALBytesPerChunk)
		ratio("WAL bytes per chunk, fleet (1 worker process) vs the floor", v, "<= 1.5", v > 0 && v <= 1.5)
		ratio("fleet: server commits per chunk", fleet.CommitsPerChunk, "<= 1.1", fleet.CommitsPerChunk <= 1.1)
		ratio("fleet: WAL fsyncs per chunk", fleet.WALSyncsPerChunk, "<= 1.1", fleet.WALSyncsPerChunk <= 1.1)
		v = div(get("fleet", "2 worker").ChunksPerS, fleet.ChunksPerS)
		ratio("fleet: 2 worker processes vs 1", v, ">= 1.6 until the server's CPU is the limit", v >= 1.6)
		v = div(get("fleet", "4 worker").ChunksPerS, fleet.ChunksPerS)
		ratio("fleet: 4 worker processes vs 1", v, ">= 1.5", v >= 1.5)
	}
	if slices.ContainsFunc(r.Pairs, func(p Pair) bool { return p.Name == appPairName }) {
		v = side(appPairName) // may be below 0 in a run too short to tell: the application ran faster beside the change
		ratio("the application's lost TPS per changed row/s, beside chunks vs beside the DBA's loop (chunk and batch 10)", v, "<= 1.0", v <= 1.0)
		v = div(get("application", "pgbench beside chunks").P99Ms, get("application", "pgbench beside the DBA's loop").P99Ms)
		ratio("the application's p99, beside chunks vs beside the DBA's loop (chunk and batch 10)", v, "<= 1.0", v <= 1.0)
	}
	for _, size := range loopSizes {
		goal := 0.9 // the goal at chunk size 100 and 1,000
		if size == 10 {
			goal = 1.0
		}
		if v = side(loopPairName(size)); v > 0 {
			ratio(fmt.Sprintf("a declared change, 2 worker processes vs the DBA's loop on 2 connections, rows/s (chunk and batch %d)", size),
				v, fmt.Sprintf(">= %.1f", goal), v >= goal)
		}
		// The loop that keeps what chunks keeps (docs/limits-and-decisions.md).
		if v = side(fairLoopPairName(size)); v > 0 {
			ratio(fmt.Sprintf("a declared change, 2 worker processes vs the loop with chunks' audit on 2 connections, rows/s (chunk and batch %d)", size),
				v, ">= 0.9", v >= 0.9)
		}
	}
	if get("pacing", "1 worker process, no check").ChunksPerS > 0 {
		v = side("the replica lag check, nothing throttling: with it vs without")
		ratio("the replica lag check, nothing throttling: chunks/s with it vs without", v, ">= 0.98", v >= 0.98)
	}
	if rt := get("chunks", "size 10").RoundTrips; rt != 0 {
		ratio("round trips per RunChunk", rt, "= 1", rt == 1)
	}
	if rt := get("chunks", "size 10, with a fault").RoundTrips; rt != 0 {
		ratio("round trips per RunChunk with a fault hook", rt, "= 2", rt == 2)
	}
	if c := get("campaign", "create"); c.Chunks > 0 {
		ratio("campaign create, s", c.Seconds, "< 3 (100,000 targets)", c.Seconds < 3)
		v = div(get("campaign", "register").Seconds, c.Seconds)
		ratio("campaign create vs one register per job", v, ">= 20", v >= 20)
		// The preflight against one worker's drain, per target.
		check, drain := get("campaign", fmt.Sprintf("check of %d targets, none committed", c.Orders)), get("campaign", "drain of the other")
		if check.Orders > 0 && drain.Orders > 0 {
			v = div(check.Seconds/float64(check.Orders), drain.Seconds/float64(drain.Orders))
			ratio("campaign check vs one connection's drain, time per target", v, "<= 1", v <= 1)
		}
		for _, what := range []string{"status", "report"} {
			for _, at := range []string{"60 committed", "all committed"} {
				x := get("campaign", fmt.Sprintf("%s of %d targets, %s", what, c.Orders, at))
				ratio(fmt.Sprintf("campaign %s p50, ms, %s", what, at), x.P50Ms, "< 200 (100,000 targets)", x.P50Ms < 200)
			}
		}
	}
	for _, size := range []string{"size 1", "size 10"} {
		declared, builtin := get("declared change", "declared, "+size), get("declared change", "built-in, "+size)
		if declared.Variant == "declared, "+size && builtin.Variant == "built-in, "+size {
			v = side("the declared change vs the built-in cancellation, " + size + " (its time per chunk over the built-in's)")
			ratio("declared change vs the built-in cancellation, time per chunk (one round trip each), "+size, v, "<= 1.1", v <= 1.1)
		}
		if deleted := get("declared change", "delete, archived, "+size); deleted.ChunksPerS > 0 && declared.ChunksPerS > 0 {
			v = declared.ChunksPerS / deleted.ChunksPerS
			ratio("a declared change's delete (archived) vs its update, time per chunk, "+size, v, "<= 1.5", v <= 1.5)
		}
	}
	if r.DrainPeakRSSMB > 0 {
		ratio("drain peak memory, MB", r.DrainPeakRSSMB, "< 30", r.DrainPeakRSSMB < 30)
	}
	return out
}

func randomHex() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// cpuModel is the processor's name from /proc/cpuinfo, with the core count.
func cpuModel() string {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	model, cores := "unknown", 0
	for _, line := range strings.Split(string(info), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			switch strings.TrimSpace(k) {
			case "model name":
				model = strings.TrimSpace(v)
			case "processor":
				cores++
			}
		}
	}
	return fmt.Sprintf("%s, %d cores", model, cores)
}
