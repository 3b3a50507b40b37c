package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
)

// campaigns measures campaign create of n targets (one transaction) against
// registering the same split, one register call per job; campaign check
// of the n targets, none committed, against draining them on one
// connection (one worker's pace; issue 38: a preflight no slower than the
// run); and campaign status and report over the n targets (reps times
// each, a few chunks committed first, with other campaigns' jobs in the
// same tables).
func campaigns(ctx context.Context, cfg *pgx.ConnConfig, seed *seeder, n int, add func(Result)) (err error) {
	conn, _, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeConn(ctx, conn, &err)
	// Filler orders (tenant filler, revision 0, qty 1) for three approvals
	// of n: the campaign, the one-by-one registers, and another campaign
	// that status and report must not scan.
	first, err := seed.filler(ctx, 3*n)
	if err != nil {
		return err
	}
	targets := func(from int64) driver.CampaignTargets {
		ct := driver.CampaignTargets{Targets: make([]driver.Target, n)}
		for i := range ct.Targets {
			ct.Targets[i] = driver.Target{ID: from + int64(i), Revision: 0, Qty: 1}
		}
		return ct
	}
	name := fmt.Sprintf("bench-%d", seed.nextJob)
	seed.nextJob++
	start := time.Now()
	created, err := driver.CreateCampaign(ctx, conn, driver.CampaignSpec{Name: name, Tenant: "filler", ChunkSize: 10}, targets(first))
	if err != nil {
		return err
	}
	d := time.Since(start)
	add(sample{chunks: 1, orders: n, elapsed: d, latencies: []time.Duration{d}}.result("campaign",
		fmt.Sprintf("create %d targets (%d jobs), one transaction", n, created.Jobs), false))
	if _, err := driver.CreateCampaign(ctx, conn, driver.CampaignSpec{Name: name + "-other", Tenant: "filler", ChunkSize: 10},
		targets(first+int64(2*n))); err != nil {
		return err
	}

	// The same jobs (60 targets each), one register call (one transaction) each.
	one := targets(first + int64(n)).Targets
	prefix := fmt.Sprintf("%s-reg-", name)
	start = time.Now()
	jobs := 0
	for i := 0; i < n; i += 60 {
		plan := driver.Plan{JobID: fmt.Sprintf("%s%d", prefix, jobs), Tenant: "filler", Targets: one[i:min(i+60, n)], ChunkSize: 10, AllowPartial: true}
		if _, err := driver.Register(ctx, conn, plan); err != nil {
			return err
		}
		jobs++
	}
	d = time.Since(start)
	add(sample{chunks: jobs, orders: n, elapsed: d}.result("campaign", fmt.Sprintf("register the same %d jobs, one call each", jobs), false))

	measure := func(label string) error {
		if _, err := conn.Exec(ctx, "analyze orders, jobs, job_audit, campaign_jobs, campaigns, job_queue"); err != nil {
			return err
		}
		const reps = 5
		for _, op := range []struct {
			what string
			fn   func() error
		}{
			{"status", func() error { _, err := driver.CampaignStatus(ctx, conn, name); return err }},
			{"report", func() error { _, err := driver.CampaignReport(ctx, conn, name); return err }},
		} {
			s := sample{chunks: reps, orders: reps * n}
			for range reps {
				start := time.Now()
				if err := op.fn(); err != nil {
					return err
				}
				s.latencies = append(s.latencies, time.Since(start))
				s.elapsed += time.Since(start)
			}
			add(s.result("campaign", fmt.Sprintf("%s of %d targets, %s (another campaign of %d alongside)", op.what, n, label, n), false))
		}
		return nil
	}
	// The preflight, before anything is committed.
	start = time.Now()
	if _, err := driver.CheckCampaign(ctx, conn, name, 100); err != nil {
		return err
	}
	d = time.Since(start)
	add(sample{chunks: 1, orders: n, elapsed: d, latencies: []time.Duration{d}}.result("campaign",
		fmt.Sprintf("check of %d targets, none committed", n), false))
	for range 20 {
		if _, err := conn.Exec(ctx, "select run_chunk($1)", name+"-000001"); err != nil {
			return err
		}
	}
	if err := measure("60 committed"); err != nil {
		return err
	}
	// Every job of the campaign run to its end, one chunk at a time, on
	// one connection: one worker's drain (the 200 targets already
	// committed aside).
	start = time.Now()
	for _, job := range seqJobIDs(name, created.Jobs) {
		for {
			var done bool
			if err := conn.QueryRow(ctx, "select (run_chunk($1)->>'done')::boolean", job).Scan(&done); err != nil {
				return err
			}
			if done {
				break
			}
		}
	}
	d = time.Since(start)
	add(sample{chunks: 1, orders: n - 200, elapsed: d, latencies: []time.Duration{d}}.result("campaign",
		fmt.Sprintf("drain of the other %d targets on one connection", n-200), false))
	return measure("all committed")
}

// seqJobIDs are the job ids of a campaign of n jobs.
func seqJobIDs(name string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%06d", name, i+1)
	}
	return ids
}
