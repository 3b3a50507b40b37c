-- Routing register_undo: the undo is built and registered on the shard of
-- the job's tenant, as a job of that tenant, in one transaction there (the
-- template is job_call.sql). NEW_JOB_ID has no default here, unlike on a
-- shard: register_undo(job, new_job) of one server, sent to a router by
-- mistake, must not read as register_undo(tenant, job_id).
{{ template "job_call.sql" (merge (dict "name" "register_undo" "returns" "jsonb"
  "args" (list "new_job_id text")
  "comment" `Registers the undo of job JOB_ID of TENANT as job NEW_JOB_ID (NULL: JOB_ID-undo) on the tenant's
shard, as register_undo(job_id, new_job_id) does there: {"job_id", "undoes", "created", "targets",
"drifted", "missing"}. The undo is a job of TENANT on that shard, queued for its workers; run it with
run_chunk(tenant, new_job_id). CH409 as register_undo (an unknown job for TENANT too); 22023 bad
new_job_id.`) .) }}
