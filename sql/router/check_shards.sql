-- Routing a check of every shard (the template is all_call.sql): chunks
-- router install runs it before it commits, so a router is never left
-- pointing at a shard that cannot be reached or has no chunks, or one older
-- than the router's calls (they call the shard's run_chunk(tenant, job_id)).
{{ template "all_call.sql" (merge (dict "name" "check_shards" "key" "" "placed" false
  "list" (printf "jsonb_build_array(jsonb_build_object('installed', to_regprocedure('%s.run_chunk(text, text)') is not null))" .shard_schema)
  "comment" `Asks every shard at once whether it answers and has chunks in the shards' schema, as new as
the router's calls (run_chunk(tenant, job_id)):
[{"installed": true, "shard": "p0"}, ...], ordered by shard.`) .) }}
