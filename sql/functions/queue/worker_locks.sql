-- Fleet mode: the sessions that hold an advisory lock in this database as
-- a role that may send heartbeats (worker_heartbeat), read once from
-- pg_locks. A worker id is alive while its key (worker_lock_key) is among
-- them; a lock taken by a role without chunks operator access never makes
-- a worker look alive.
create or replace function {{ .schema }}.worker_locks() returns table(key bigint, pid integer)
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  select (l.classid::bigint << 32) | l.objid::bigint, l.pid
    from pg_locks as l
    join pg_stat_activity as a on a.pid = l.pid
   where l.locktype = 'advisory' and l.objsubid = 1 and l.granted
     and l.database = (select d.oid from pg_database as d where d.datname = current_database())
     and has_function_privilege(a.usesysid,
           '{{ .schema }}.worker_heartbeat(text, text, integer, timestamptz, bigint, text, text)', 'EXECUTE')
$$;
comment on function {{ .schema }}.worker_locks() is
$c$The advisory locks held in this database by sessions whose role may execute worker_heartbeat: KEY
(compare with worker_lock_key(worker)) and the backend's PID. Read-only: it locks nothing.$c$;
