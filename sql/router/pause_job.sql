-- Routing pause_job: on the tenant's shard, whose workers it stops (the
-- template is job_call.sql).
{{ template "job_call.sql" (merge (dict "name" "pause_job" "returns" "boolean"
  "comment" `Pauses job JOB_ID of TENANT on the tenant's shard, as pause_job(job_id) does there: it waits for a
chunk in flight (up to 5 s), then no worker of that shard starts one until resume_job. Returns true when
it paused the job, false when it was paused already. CH409 unknown (for TENANT) or finished job.`) .) }}
