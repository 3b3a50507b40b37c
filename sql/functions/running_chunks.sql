-- Fleet mode: the chunks in flight right now. A chunk holds its job's
-- advisory lock (run_lock_key) until it commits: read once from pg_locks,
-- with the backend's application_name (a worker sets its id there).
create or replace function {{ .schema }}.running_chunks() returns table(key bigint, pid integer, application_name text)
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  select (l.classid::bigint << 32) | l.objid::bigint, l.pid, a.application_name::text
    from pg_locks as l
    left join pg_stat_activity as a on a.pid = l.pid
   where l.locktype = 'advisory' and l.objsubid = 1 and l.granted
     and l.database = (select d.oid from pg_database as d where d.datname = current_database())
$$;
comment on function {{ .schema }}.running_chunks() is
$c$The advisory locks that chunks in flight hold in this database, one row each: KEY (compare with
run_lock_key(job_id)), the backend's PID and its APPLICATION_NAME. Read-only: it locks nothing.$c$;
