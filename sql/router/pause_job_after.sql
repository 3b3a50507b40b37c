-- Routing pause_job_after, the canary: on the tenant's shard, whose
-- workers count the chunks (the template is job_call.sql).
{{ template "job_call.sql" (merge (dict "name" "pause_job_after" "returns" "boolean"
  "args" (list "after integer")
  "comment" `Canary of job JOB_ID of TENANT on the tenant's shard, as pause_job_after(job_id, after) does there:
that shard's workers run AFTER (1 to 64) more chunks of it, and the pass that commits the last of them
pauses the job in the same transaction. Returns true when it changed the queue, false when the same
canary was already pending. CH409 unknown (for TENANT) or finished job, or AFTER not below the chunks
left; 22023 bad AFTER.`) .) }}
