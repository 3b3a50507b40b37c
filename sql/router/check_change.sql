-- Routing check_change: the preflight of a declared change's job reads on
-- the shard of the plan's tenant, where register_change would record it
-- (the template is plan_call.sql).
{{ template "plan_call.sql" (merge (dict "name" "check_change" "returns" "jsonb" "args" (list "change text")
  "comment" `Preflight of PLAN, a job of the declared change CHANGE, on its tenant's shard
(shard_of(plan ->> 'tenant')), as check_change(change, plan) reads it there: whether each target's row
would take the change now, and whether the job id is free, registered with this approval, or a
conflict on that shard. Nothing is locked or written.`) .) }}
