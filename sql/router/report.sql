-- Routing report: read on the tenant's shard (the template is job_call.sql).
{{ template "job_call.sql" (merge (dict "name" "report" "returns" "jsonb"
  "comment" `The report of job JOB_ID of TENANT, read on the tenant's shard as report(job_id) reads it:
{"approved", "committed", "remaining", "matching", "drifted", "missing"}. Changes nothing. CH409 "job x:
not found for tenant t" when the shard has no such job of TENANT.`) .) }}
