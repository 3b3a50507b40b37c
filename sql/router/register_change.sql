-- Routing register_change: the plan's tenant picks the shard, which records
-- the job of the declared change (and queues it) exactly as register_change
-- does on one server (the template is plan_call.sql). The change must be
-- defined on that shard (chunks change define on every shard).
{{ template "plan_call.sql" (merge (dict "name" "register_change" "returns" "boolean" "args" (list "change text")
  "comment" `Registers an approved job of the declared change CHANGE on its tenant's shard
(shard_of(plan ->> 'tenant')), exactly as register_change does on one server: true when new, false
when the same approval is already there; the job is queued there too. The change must be defined on
that shard (define_change is run on each shard by its owner).`) .) }}
