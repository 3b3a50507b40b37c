-- Fleet mode: the advisory lock key of a worker id. A worker's heartbeat
-- session holds it (session-level) for as long as the worker lives, so
-- "alive" is a session on this server, never a row's age: a worker that
-- died, or a row that came from another server (a promoted standby), has
-- none. Seeded by this schema's workers table, so schemas in one database
-- never share keys. No SET clause, so that callers inline it.
create or replace function {{ .schema }}.worker_lock_key(worker text) returns bigint
language sql stable parallel safe
as $$
  select hashtextextended(worker, '{{ .schema }}.workers'::regclass::oid::bigint)
$$;
comment on function {{ .schema }}.worker_lock_key(text) is
$c$The advisory lock key (bigint) that the heartbeat session of worker WORKER holds while the worker
lives (worker_heartbeat takes it, worker_gone releases it). Seeded by this schema's workers oid.$c$;
