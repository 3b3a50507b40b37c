-- Routing resume_job: on the tenant's shard, whose workers are notified (the
-- template is job_call.sql).
{{ template "job_call.sql" (merge (dict "name" "resume_job" "returns" "boolean"
  "comment" `Gives job JOB_ID of TENANT back to the workers of the tenant's shard, as resume_job(job_id) does
there. Returns true when it queued the job, false when it was queued already. CH409 unknown (for TENANT)
or finished job.`) .) }}
