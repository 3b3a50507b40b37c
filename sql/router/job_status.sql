-- Routing job_status: every shard's jobs (the template is all_call.sql).
{{ template "all_call.sql" (merge (dict "name" "job_status" "list" (printf "%s.job_status()" .shard_schema) "key" "job_id" "placed" true
  "comment" `Every job of every shard with its fleet state, as one jsonb list ordered by job_id, then shard:
the entries of job_status() on each shard, each with "shard" ("p0", ...) added, the shard whose
partition its tenant's calls go to (shard_of). Asks every shard at once (RUN ON ALL). Read-only.`) .) }}
