-- Routing check_plan: the preflight reads on the shard of the plan's
-- tenant, where register would record the job (the template is
-- plan_call.sql).
{{ template "plan_call.sql" (merge (dict "name" "check_plan" "returns" "jsonb"
  "comment" `Preflight of PLAN on its tenant's shard (shard_of(plan ->> 'tenant')), as check_plan(plan) reads it
there: {"job_id", "ok", "job", "job_problem", "targets": [...]}: whether each target's order would be
cancelled now, and whether the job id is free, registered with this approval, or a conflict on that
shard (a job id is unique per shard). Nothing is locked or written.`) .) }}
