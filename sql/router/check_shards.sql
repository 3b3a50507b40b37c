-- Routing a check of every shard (the template is all_call.sql): chunks
-- router install runs it before it commits, so a router is never left
-- pointing at a shard that cannot be reached or has no chunks.
{{ template "all_call.sql" (merge (dict "name" "check_shards" "key" "" "placed" false
  "list" (printf "jsonb_build_array(jsonb_build_object('installed', to_regprocedure('%s.run_next_chunk(text, integer, integer)') is not null))" .shard_schema)
  "comment" `Asks every shard at once whether it answers and has chunks in the shards' schema:
[{"installed": true, "shard": "p0"}, ...], ordered by shard.`) .) }}
