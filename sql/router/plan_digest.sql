-- Routing plan_digest: what register would record of a plan, and its
-- approval digest (two people), read on the shard of the plan's tenant
-- (the template is plan_call.sql). CHANGE is NULL for a plan of orders.
{{ template "plan_call.sql" (merge (dict "name" "plan_digest" "returns" "jsonb" "args" (list "change text")
  "comment" `What register (CHANGE NULL) or register_change would record of PLAN on its tenant's shard
(shard_of(plan ->> 'tenant')), as plan_digest(change, plan) answers there: {"plan", "change",
"change_digest", "digest", "two_person"}. Nothing is locked or written.`) .) }}
