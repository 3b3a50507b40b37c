-- Routing register: the plan's tenant picks the shard, which records the
-- job (and queues it) exactly as register does on one server (the template
-- is plan_call.sql).
{{ template "plan_call.sql" (merge (dict "name" "register" "returns" "boolean"
  "comment" `Registers an approved job on its tenant's shard (shard_of(plan ->> 'tenant')), exactly as register
does on one server: true when new, false when the same approval is already there; the job is queued
there too. A job id is unique per shard: the same id under two tenants of one shard is CH409, and so is
a different job under this id.`) .) }}
