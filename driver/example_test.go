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
	dsn := exampleDSN() // yours: "postgres://app@localhost/shop?search_path=lab"

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
	// Output: true [1001 1002] true
}

// Register the same approval twice: the second call changes nothing.
// Another plan under the same job id is a conflict.
func ExampleRegister() {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, exampleDSN()) // yours: "postgres://app@localhost/shop?search_path=lab"
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := conn.Close(ctx); err != nil {
			log.Print(err)
		}
	}()
	plan, err := driver.Manifest("festival", "alien-desert", []driver.Target{
		{ID: 1001, Revision: 0, Qty: 2},
		{ID: 1002, Revision: 4, Qty: 1},
	}, 1, true)
	if err != nil {
		log.Fatal(err) // errors.Is(err, driver.ErrInvalid); the text names the field
	}
	for range 2 {
		created, err := driver.Register(ctx, conn, plan)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("created:", created)
	}

	plan.Targets = plan.Targets[:1]
	_, err = driver.Register(ctx, conn, plan)
	fmt.Println(errors.Is(err, driver.ErrConflict))
	// Output:
	// created: true
	// created: false
	// true
}

// Run one chunk with a hook at every point, as a crash drill would: an
// error returned before after-commit rolls the chunk back.
func ExampleRunChunk() {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, exampleDSN()) // yours: "postgres://app@localhost/shop?search_path=lab"
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := conn.Close(ctx); err != nil {
			log.Print(err)
		}
	}()
	plan, err := driver.Manifest("festival", "alien-desert", []driver.Target{
		{ID: 1001, Revision: 0, Qty: 2},
		{ID: 1002, Revision: 4, Qty: 1},
	}, 1, true)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := driver.Register(ctx, conn, plan); err != nil {
		log.Fatal(err)
	}
	res, err := driver.RunChunk(ctx, conn, "festival", func(point string) error {
		fmt.Println("reached", point)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Processed, res.NextIndex, res.Done)
	// Output:
	// reached after-orders
	// reached after-audit
	// reached after-checkpoint
	// reached after-commit
	// [1001] 1 false
}

// Drain a job: one chunk per call, each on a connection of its own, until
// the job is done or maxChunks calls have run.
func ExampleDrain() {
	ctx := context.Background()
	dsn := exampleDSN() // yours: "postgres://app@localhost/shop?search_path=lab"
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := conn.Close(ctx); err != nil {
			log.Print(err)
		}
	}()
	plan, err := driver.Manifest("festival", "alien-desert", []driver.Target{
		{ID: 1001, Revision: 0, Qty: 2},
		{ID: 1002, Revision: 4, Qty: 1},
		{ID: 1003, Revision: 1, Qty: 5},
	}, 2, true)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := driver.Register(ctx, conn, plan); err != nil {
		log.Fatal(err)
	}
	res, err := driver.Drain(ctx, dsn, "festival", 64)
	if err != nil {
		log.Fatal(err) // res holds what was committed before the error
	}
	fmt.Println(res.Calls, res.Processed, res.NextIndex, res.Done)
	// Output: 2 [1001 1002 1003] 3 true
}

// Report which of a job's committed orders still look as the job left them:
// here order 1002 was edited after its chunk committed.
func ExampleReport() {
	ctx := context.Background()
	dsn := exampleDSN() // yours: "postgres://app@localhost/shop?search_path=lab"
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := conn.Close(ctx); err != nil {
			log.Print(err)
		}
	}()
	plan, err := driver.Manifest("festival", "alien-desert", []driver.Target{
		{ID: 1001, Revision: 0, Qty: 2},
		{ID: 1002, Revision: 4, Qty: 1},
		{ID: 1003, Revision: 1, Qty: 5},
	}, 2, true)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := driver.Register(ctx, conn, plan); err != nil {
		log.Fatal(err)
	}
	if _, err := driver.RunChunk(ctx, conn, "festival", nil); err != nil {
		log.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "update orders set qty = 3, revision = revision + 1 where id = 1002"); err != nil {
		log.Fatal(err)
	}
	rep, err := driver.Report(ctx, conn, "festival")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed", rep.Committed, "remaining", rep.Remaining)
	fmt.Println("matching", rep.Matching, "drifted", rep.Drifted, "missing", rep.Missing)
	// Output:
	// committed [1001 1002] remaining [1003]
	// matching [1001] drifted [1002] missing []
}

// Declare a change of one of your own tables, then register and run a job
// of it: hold two captured payments of merchant 42, pinned at the
// lock_version and amount a person approved.
func ExampleRegisterChange() {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, exampleDSN()) // yours: "postgres://app@localhost/shop?search_path=lab"
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := conn.Close(ctx); err != nil {
			log.Print(err)
		}
	}()
	// Once, as the owner of the chunks schema.
	if _, err := driver.DefineChange(ctx, conn, driver.ChangeDefinition{
		Name: "hold_payment", Table: "shop.payments", Key: driver.KeyColumn("payment_id"),
		Tenant: "merchant_id", Version: "lock_version", Expect: []string{"amount_cents"},
		When:          map[string]any{"status": "captured"},
		Set:           map[string]any{"status": "on_hold"},
		SetFromTarget: map[string]string{"hold_reason": "reason"},
	}); err != nil {
		log.Fatal(err) // errors.Is(err, driver.ErrInvalid), naming the table, column or constant
	}

	plan := driver.ChangePlan{JobID: "holds-1", Tenant: "42", ChunkSize: 2, AllowPartial: true,
		Targets: []map[string]any{
			{"payment_id": 7, "lock_version": 3, "amount_cents": 1200, "reason": "chargeback"},
			{"payment_id": 5, "lock_version": 0, "amount_cents": 300, "reason": "chargeback"},
		}}
	created, err := driver.RegisterChange(ctx, conn, "hold_payment", plan)
	if err != nil {
		log.Fatal(err) // the server checks the targets against the change
	}
	res, err := driver.JobRef{ID: "holds-1", Tenant: "42"}.RunChunk(ctx, conn, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(created, res.Processed, res.Done)
	// Output: true [5 7] true
}
