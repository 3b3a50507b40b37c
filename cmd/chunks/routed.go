package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/router"
)

// tenantFlag is --tenant of the job commands: with it, the command goes
// through a chunks router (chunks router install), whose --dsn it is, to
// the tenant's shard. A job id is unique per shard only, so a router needs
// the tenant to find the job.
func tenantFlag() cli.Flag {
	return &cli.StringFlag{Name: "tenant", Usage: "the job's `TENANT`, through a chunks router: --dsn is the router's, and the job is on the tenant's shard"}
}

// tenantArg is --tenant, checked before any connection; "" when not typed.
func tenantArg(c *cli.Context) (string, error) {
	if !c.IsSet("tenant") {
		return "", nil
	}
	tenant := c.String("tenant")
	return tenant, driver.CheckTenant(tenant)
}

// jobArgs is the command's --tenant ("" without it) and its one job id
// argument, both checked before any connection.
func jobArgs(c *cli.Context) (tenant, jobID string, err error) {
	if tenant, err = tenantArg(c); err != nil {
		return "", "", err
	}
	jobID, err = jobArg(c)
	return tenant, jobID, err
}

// inspectJob is the job, on one server or through a router (a tenant).
func inspectJob(ctx context.Context, db driver.DB, tenant, jobID string) (*driver.Job, error) {
	if tenant != "" {
		return router.InspectJob(ctx, db, tenant, jobID)
	}
	return driver.InspectJob(ctx, db, jobID)
}

// reportJob is the job's report, on one server or through a router.
func reportJob(ctx context.Context, db driver.DB, tenant, jobID string) (driver.JobReport, error) {
	if tenant != "" {
		return router.Report(ctx, db, tenant, jobID)
	}
	return driver.Report(ctx, db, jobID)
}

// registerUndo is the undo of the job, registered on one server or through
// a router.
func registerUndo(ctx context.Context, db driver.DB, tenant, jobID, newJobID string) (driver.Undo, error) {
	if tenant != "" {
		return router.RegisterUndo(ctx, db, tenant, jobID, newJobID)
	}
	return driver.RegisterUndo(ctx, db, jobID, newJobID)
}

// pauseJobAfter is the canary, on one server or through a router.
func pauseJobAfter(ctx context.Context, db driver.DB, tenant, jobID string, n int) (bool, error) {
	if tenant != "" {
		return router.PauseAfter(ctx, db, tenant, jobID, n)
	}
	return fleet.PauseAfter(ctx, db, jobID, n)
}

// routedChunk is chunks run --tenant: one chunk through the router, on a
// connection of its own.
func routedChunk(c *cli.Context, tenant, jobID string) (res driver.ChunkResult, err error) {
	err = withConn(c, func(ctx context.Context, conn *pgx.Conn) (err error) {
		res, err = router.RunChunk(ctx, conn, tenant, jobID)
		return err
	})
	return res, err
}

// routedDrain is one drainer of chunks drain --tenant: the job to its end
// through the router, on a connection of its own.
func routedDrain(ctx context.Context, cfg *pgx.ConnConfig, tenant, jobID string, maxChunks int) (res driver.DrainResult, err error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return driver.DrainResult{}, err
	}
	defer func() {
		if cerr := conn.Close(context.WithoutCancel(ctx)); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close: %w", cerr))
		}
	}()
	return router.Drain(ctx, conn, tenant, jobID, maxChunks, nil)
}

// errRoutedDrill refuses a crash drill through a router.
var errRoutedDrill = usagef("--fail-at and --crash-at need the shard itself: through a router, a chunk commits on " +
	"its shard inside the one call, with no hook before its COMMIT (run the drill with the shard's --dsn, without --tenant)")

// errRoutedPacing refuses pacing through a router.
var errRoutedPacing = usagef("--max-replica-lag and --throttle-query read the server they connect to, and a router is " +
	"not the shard: pace the shard's own workers (chunks worker --dsn SHARD --max-replica-lag ...)")

// jobLineage is the job's kind and its undo, on one server or through a
// router.
func jobLineage(ctx context.Context, db driver.DB, tenant, jobID string) (*driver.JobLineage, error) {
	if tenant != "" {
		return router.Lineage(ctx, db, tenant, jobID)
	}
	return driver.Lineage(ctx, db, jobID)
}
