-- Routing worker_status: every shard's live workers (the template is all_call.sql).
{{ template "all_call.sql" (merge (dict "name" "worker_status" "list" (printf "%s.worker_status()" .shard_schema) "key" "worker_id" "placed" false
  "comment" `The live workers of every shard (a worker serves the one shard it connects to), as one jsonb list
ordered by worker_id, then shard: the entries of worker_status() on each shard, each with "shard" added.
Asks every shard at once (RUN ON ALL). Read-only.`) .) }}
