package fleet_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
)

// Run a worker in your own process: it takes every job registered in the
// schema, one chunk per pass, until it is stopped. Registering queues the
// job and wakes the worker (LISTEN/NOTIFY).
func ExampleWorker() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, exampleDSN()) // yours: "postgres://app@localhost/shop?search_path=lab"
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	w := &fleet.Worker{Pool: pool, ID: "worker-1", Concurrency: 2,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if err := w.Start(ctx); err != nil {
		log.Fatal(err) // bad settings, no queue, a permanent fault, the ID taken
	}

	plan, err := driver.Manifest("festival", "alien-desert", []driver.Target{
		{ID: 1001, Revision: 0, Qty: 2},
		{ID: 1002, Revision: 4, Qty: 1},
		{ID: 1003, Revision: 1, Qty: 5},
	}, 1, true)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := driver.Register(ctx, pool, plan); err != nil {
		log.Fatal(err)
	}
	for done := false; !done; time.Sleep(50 * time.Millisecond) {
		jobs, err := fleet.Status(ctx, pool)
		if err != nil {
			log.Fatal(err)
		}
		done = jobs[0].State == fleet.StateDone
	}

	// Stop lets the chunks in flight finish; StopAndCancel rolls them back.
	if err := w.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%+v\n", w.Stats())
	// Output: {Chunks:3 JobsDone:1 Conflicts:0 ErrorPauses:0 Failures:0}
}

// The canary: the fleet runs one chunk of the job, then the job pauses
// itself, in the same transaction as that chunk. A person looks at what it
// did (chunks report), then resumes it.
func ExamplePauseAfter() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, exampleDSN()) // yours: "postgres://app@localhost/shop?search_path=lab"
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	plan, err := driver.Manifest("festival", "alien-desert", []driver.Target{
		{ID: 1001, Revision: 0, Qty: 2},
		{ID: 1002, Revision: 4, Qty: 1},
		{ID: 1003, Revision: 1, Qty: 5},
	}, 1, true)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := driver.Register(ctx, pool, plan); err != nil {
		log.Fatal(err)
	}
	job := driver.JobRef{ID: "festival", Tenant: "alien-desert"}
	if _, err := fleet.PauseAfter(ctx, pool, job, 1); err != nil {
		log.Fatal(err)
	}

	w := &fleet.Worker{Pool: pool, ID: "worker-1",
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := w.Stop(ctx); err != nil {
			log.Print(err)
		}
	}()
	for paused := false; !paused; time.Sleep(50 * time.Millisecond) {
		jobs, err := fleet.Status(ctx, pool)
		if err != nil {
			log.Fatal(err)
		}
		if paused = jobs[0].State == fleet.StatePaused; paused {
			fmt.Println(jobs[0].State, jobs[0].NextIndex, "of", jobs[0].N)
		}
	}
	// Output: paused 1 of 3
}
