// Package driver applies an approved bulk change in small chunks that each
// commit on their own, over pgx v5 and the chunks SQL functions: the
// built-in cancellation of a fixed list of orders (below), or a declared
// change on a table of your own ([DefineChange], [RegisterChange]), whose
// statements run as the writer role (docs/roles.md "Code on your tables").
//
// # The idea
//
// An operator approves a plan: a job id, a tenant, 1 to 64 targets (order id
// plus the revision and qty it was approved at) and a chunk size of 1 to 10.
// [Register] freezes it on the server. Each [RunChunk] then cancels the next
// chunk_size orders, writes one audit row per order and moves the job's
// next_index, in ONE transaction: a chunk is all there or not at all. If the
// client dies at any point, the next call resumes right after the last
// committed chunk; two workers on one job serialize on the job row lock and
// change every order exactly once. [Report] tells, for the committed part,
// which orders still look as the job left them, which drifted, which are
// missing.
//
// # Installing
//
// [Migrate] installs the tables and functions into a schema (or the chunks
// migrate command, or the tern CLI with the files in sql/). Connections then
// need that schema on their search_path: set cfg.RuntimeParams["search_path"]
// on a config from [ParseDSN] (and use [ChunkFileConfig], [DrainConfig]), or
// use a DSN with options=-csearch_path=lab.
//
// # Safety
//
// [CheckPlan] is a read-only preflight of a plan: for each target, whether
// it would be cancelled now or exactly why not, and whether the job id is
// free, registered with this approval or taken (one SELECT; nothing locked
// or written). [RegisterUndo] registers the exact undo of a job: a job of
// kind [KindRestore] whose targets are the job's committed orders that are
// still as it left them, each restored to pending, chunk by chunk, like any
// other job. [Lineage] says which job undid which. The canary is
// fleet.PauseAfter.
//
// # Errors
//
// Bad input is [ErrInvalid] (also the server's SQLSTATE 22023) and is refused
// before anything is written; a business conflict is [ErrConflict] (SQLSTATE
// CH409). Both are [*Error] values whose text names the field or the id, and
// which unwrap to the server's *pgconn.PgError when there is one. Every other
// error (lock timeout 55P03, statement timeout 57014, a lost connection, a
// hook's own error) passes through unchanged. Nothing is retried. A result
// of the server that does not have exactly the keys of its Go type (the
// functions installed are of another version) is an error naming the
// function and the key: every jsonb result is read by [QueryJSON].
//
// # A chunk and its hooks
//
// [RunChunk] costs two round trips: BEGIN, the per-chunk bounds and SELECT
// run_chunk(job) in one batch, then COMMIT. A [Fault] sees the hook points
// [AfterOrders], [AfterAudit], [AfterCheckpoint] (before COMMIT: an error or
// panic there rolls this chunk back) and [AfterCommit] (the chunk is kept).
// Crash drills use them to stop a process at each point.
//
// # Example
//
//	plan, err := driver.ParsePlan(approvalJSON) // or driver.Manifest(...)
//	if err != nil {
//		return err // errors.Is(err, driver.ErrInvalid), naming the field
//	}
//	dsn := "postgres://app@db/shop?options=-csearch_path%3Dlab"
//	pool, err := pgxpool.New(ctx, dsn)
//	if err != nil {
//		return err
//	}
//	created, err := driver.Register(ctx, pool, plan)
//	if err != nil {
//		return err
//	}
//	res, err := driver.Drain(ctx, dsn, plan.JobID, 64)
//	if err != nil {
//		return err // res holds what was committed before the error
//	}
//	fmt.Println(created, res.Calls, res.Processed, res.Done)
package driver
