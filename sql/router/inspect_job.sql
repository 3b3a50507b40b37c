-- Routing inspect_job: read on the tenant's shard (the template is job_call.sql).
{{ template "job_call.sql" (merge (dict "name" "inspect_job" "returns" "jsonb"
  "comment" `Job JOB_ID of TENANT as stored on the tenant's shard: {"job_id", "tenant", "targets", "chunk_size",
"next_index"}, or NULL when the shard has no such job of TENANT. Read-only.`) .) }}
