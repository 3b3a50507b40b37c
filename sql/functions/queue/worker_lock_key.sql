-- Fleet mode: the advisory lock key of a worker id. A worker's heartbeat
-- session holds it (session-level) for as long as the worker lives, so
-- "alive" is a session on this server, never a row's age: a worker that
-- died, or a row that came from another server (a promoted standby), has
-- none. It is run_lock_key's, of a name no job id can have (a job id has
-- no ':'), so it never marks a job as running. Inlined like run_lock_key.
create or replace function {{ .schema }}.worker_lock_key(worker text) returns bigint
language sql stable parallel safe
as $$ select {{ .schema }}.run_lock_key('worker:' || worker) $$;
comment on function {{ .schema }}.worker_lock_key(text) is
$c$The advisory lock key (bigint) that the heartbeat session of worker WORKER holds while the worker
lives (worker_heartbeat takes it, worker_gone releases it): run_lock_key of 'worker:' || WORKER,
a name no job id can have.$c$;
