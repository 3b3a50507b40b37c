-- Routing job_lineage: read on the tenant's shard (the template is
-- job_call.sql).
{{ template "job_call.sql" (merge (dict "name" "job_lineage" "returns" "jsonb"
  "comment" `The kind and the undo of job JOB_ID of TENANT, read on the tenant's shard as job_lineage(job_id)
reads it: {"job_id", "kind", "undoes", "undone_by"}, or NULL when that shard has no such job of TENANT.
Read-only.`) .) }}
