-- Fleet mode: the live workers, for chunks status: alive on this server (a
-- session holds the worker's lock), and heard from in the last 10 s.
create or replace function {{ .schema }}.worker_status() returns jsonb
language sql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
  select coalesce(jsonb_agg(jsonb_build_object(
           'worker_id', w.worker_id, 'host', w.host, 'pid', w.pid, 'started_at', w.started_at,
           'last_seen', w.last_seen, 'chunks', w.chunks, 'state', w.state, 'reason', w.reason)
           order by w.worker_id), '[]'::jsonb)
    from workers as w
   where w.last_seen > now() - interval '10 seconds'
     and worker_lock_key(w.worker_id) in (select l.key from worker_locks() as l)
$$;
comment on function {{ .schema }}.worker_status() is
$c$The live workers (a session holds the worker's lock, worker_lock_key, and its heartbeat came in
the last 10 s), ordered by id: [{"worker_id", "host", "pid",
"started_at", "last_seen", "chunks", "state", "reason"}, ...]. state is running (in a chunk or
about to be), idle (nothing runnable) or throttled (holding new chunks; reason says why, e.g.
"replica standby1 is 2.1 s behind (max 500ms)"). Read-only.$c$;
