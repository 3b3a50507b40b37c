// Package router runs chunks over several PostgreSQL servers, the shards,
// through a router database that uses PL/Proxy: every order, job, audit and
// queue row of a tenant lives on the shard that hashtext(tenant) picks, so a
// chunk stays ONE transaction on one shard, with every guarantee of the
// one-server contract and never a two-phase commit. Each shard runs the
// unchanged chunks schema (chunks migrate, [driver.Migrate]); the router
// holds no chunks data, only its routing functions (SQL in sql/router).
//
// # Setting up
//
// [Install] makes a database a router: the plproxy extension, the cluster
// chunks_<schema> (a foreign server with the partitions p0 ... pN-1, N a
// power of 2) and the routing functions in the router's schema. [Shards]
// lists the partitions, [ShardOf] names the shard of a tenant, where an
// application puts the tenant's orders.
//
// # Naming a job
//
// A job id is unique per shard, not across shards, and a shard holds many
// tenants. So every call of one job names its tenant too: the job
// operations of packages driver and fleet take a [driver.JobRef] with its
// Tenant set ([driver.JobRef.RunChunk], [driver.DrainConfig],
// [driver.JobRef.Inspect], [driver.JobRef.Report], fleet.Pause, ...), and
// send the router the same SQL as a server, run_chunk(tenant, job_id), ...
// The shard checks that the job is the tenant's, and answers a job of
// another tenant of the same shard as missing. Registering needs nothing
// new: the plan holds its tenant, so [driver.Register] and
// [driver.CheckPlan] work on a router connection as they are, and so do
// [driver.CancelChunk] (it takes the tenant) and fleet.Status and
// fleet.Workers, which list every shard's jobs and workers (asked at once,
// RUN ON ALL), each with its Shard. This package holds only what is about
// routing: [Install], [Shards] and [ShardOf].
//
// # Transactions
//
// Each routed call is one autocommit transaction on its shard, committed
// before the call returns. A transaction on the router does not hold it: a
// rollback there undoes nothing on the shard, so [driver.CancelChunk] on a
// pgx.Tx of a router commits on the shard at once. Nothing is atomic across
// tenants, and nothing needs to be.
//
// # Failures
//
// A shard that cannot be reached fails the calls of its tenants at once
// (connect timeout 2 s) with SQLSTATE 08006 and a message that names it,
// "shard p2 is unavailable: ..."; every other shard goes on. Every other
// error is the shard's own, as it raised it (CH409, 22023, 55P03, ...),
// so [driver.ErrConflict] and [driver.ErrInvalid] match as on one server.
// When the shard is back, its jobs resume right after their last committed
// chunk, as after any crash.
//
// # Workers
//
// A fleet worker (fleet.Worker, chunks worker) serves one shard and
// connects to it directly: LISTEN does not pass through PL/Proxy.
package router
