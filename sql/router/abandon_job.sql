-- Routing abandon_job: on the tenant's shard, whose queue it leaves (the
-- template is job_call.sql).
{{ template "job_call.sql" (merge (dict "name" "abandon_job" "returns" "jsonb"
  "args" (list "reason text")
  "comment" `Abandons job JOB_ID of TENANT for good on the tenant's shard, as abandon_job(job_id, reason) does
there: {"job_id", "abandoned", "by", "at", "reason", "next_index", "targets"}. CH409 unknown (for TENANT)
or finished job; 22023 bad reason.`) .) }}
