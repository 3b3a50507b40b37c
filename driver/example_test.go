package driver_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
)

// Register an approved plan, then drain it chunk by chunk. The DSN puts the
// schema chunks was installed in (chunks migrate --schema lab) on the
// search_path.
func Example() {
	ctx := context.Background()
	dsn := "postgres://app@localhost/shop?search_path=lab"

	plan, err := driver.ParsePlan([]byte(`{"job_id": "festival", "tenant": "alien-desert",
		"targets": [{"id": 1002, "revision": 4, "qty": 1}, {"id": 1001, "revision": 0, "qty": 2}],
		"chunk_size": 10, "allow_partial": true}`))
	if err != nil {
		log.Fatal(err) // errors.Is(err, driver.ErrInvalid); the text names the field
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := conn.Close(ctx); err != nil {
			log.Print(err)
		}
	}()
	created, err := driver.Register(ctx, conn, plan)
	if err != nil {
		log.Fatal(err) // errors.Is(err, driver.ErrConflict): another plan holds this id
	}
	res, err := driver.Drain(ctx, dsn, plan.JobID, 64)
	if errors.Is(err, driver.ErrConflict) {
		log.Fatalf("stopped after %v: %v", res.Processed, err) // e.g. order 1002: state is paid
	} else if err != nil {
		log.Fatal(err)
	}
	fmt.Println(created, res.Processed, res.Done)
}

// Run one chunk with a hook at every point, as a crash drill would.
func ExampleRunChunk() {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, "postgres://app@localhost/shop?search_path=lab")
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := conn.Close(ctx); err != nil {
			log.Print(err)
		}
	}()
	res, err := driver.RunChunk(ctx, conn, "festival", func(point string) error {
		fmt.Println("reached", point) // after-orders, after-audit, after-checkpoint, after-commit
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Processed, res.NextIndex, res.Done)
}
