-- Routing run_chunk: the chunk runs on the tenant's shard, as ONE
-- transaction there (the template is job_call.sql).
{{ template "job_call.sql" (merge (dict "name" "run_chunk" "returns" "jsonb"
  "comment" `Runs the next chunk of job JOB_ID of TENANT: run_chunk(job_id) on the tenant's shard, as ONE
autocommit transaction there, committed before this returns, even when called inside a transaction of
the router (whose rollback cannot undo it). Returns {"processed", "next_index", "done"}, and fails as
run_chunk fails (CH409, 55P03, ...); CH409 "job x: not found for tenant t" when the shard has no such
job of TENANT.`) .) }}
