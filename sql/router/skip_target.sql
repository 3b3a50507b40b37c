-- Routing skip_target: on the tenant's shard, where its job and targets
-- are (the template is job_call.sql).
{{ template "job_call.sql" (merge (dict "name" "skip_target" "returns" "jsonb"
  "args" (list "key jsonb" "reason text")
  "comment" `Sets target KEY of job JOB_ID of TENANT aside on the tenant's shard, as skip_target(job_id, key, reason)
does there: {"job_id", "key", "skipped", "by", "at", "reason", "found", "paused"}. CH409 unknown (for TENANT),
finished or abandoned job, a job of orders, or no such target; 22023 bad key or reason.`) .) }}
