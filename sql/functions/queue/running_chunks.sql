-- Fleet mode: the chunks in flight right now. A chunk holds its job's
-- advisory lock (run_lock_key) until it commits: read once from pg_locks,
-- with the backend's application_name (a worker sets its id there).
-- Any role that can connect can take an advisory lock, so a lock only counts
-- when the session holding it may run a chunk: its role (usesysid, the
-- session's user, which SECURITY DEFINER does not change) may execute
-- run_chunk or run_next_chunk. Anyone else's lock on the key is not a chunk.
create or replace function {{ .schema }}.running_chunks() returns table(key bigint, pid integer, application_name text)
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  select (l.classid::bigint << 32) | l.objid::bigint, l.pid, a.application_name::text
    from pg_locks as l
    join pg_stat_activity as a on a.pid = l.pid
   where l.locktype = 'advisory' and l.objsubid = 1 and l.granted
     and l.database = (select d.oid from pg_database as d where d.datname = current_database())
     and (has_function_privilege(a.usesysid, '{{ .schema }}.run_chunk(text)'::regprocedure, 'EXECUTE')
          or has_function_privilege(a.usesysid, '{{ .schema }}.run_next_chunk(text, integer, integer, integer, text, boolean)'::regprocedure, 'EXECUTE'))
$$;
comment on function {{ .schema }}.running_chunks() is
$c$The advisory locks that chunks in flight hold in this database, one row each: KEY (compare with
run_lock_key(job_id)), the backend's PID and its APPLICATION_NAME. Only the locks of sessions
whose role may execute run_chunk or run_next_chunk count: a lock that any other role took on
the same key is no chunk. Read-only: it locks nothing.$c$;
