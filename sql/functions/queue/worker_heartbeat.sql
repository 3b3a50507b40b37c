-- Fleet mode: a worker says it is alive and what it is doing. The session
-- that sends it takes the worker's lock (worker_lock_key) and keeps it, so
-- a second worker with the same id is refused, naming the live one.
create or replace function {{ .schema }}.worker_heartbeat(worker text, host text, pid integer, started_at timestamptz,
                                                          chunks bigint, state text, reason text) returns void
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_key constant bigint := worker_lock_key(worker_heartbeat.worker);
  v_holder integer;
  v_live workers;
begin
  perform check_worker(worker_heartbeat.worker);
  if worker_heartbeat.state is null or worker_heartbeat.state not in ('running', 'idle', 'throttled') then
    raise exception 'state: must be running, idle or throttled, got %', coalesce(to_jsonb(left(worker_heartbeat.state, 40))::text, 'null')
      using errcode = '22023';
  end if;
  if worker_heartbeat.host is null or worker_heartbeat.pid is null or worker_heartbeat.started_at is null
     or worker_heartbeat.chunks is null or worker_heartbeat.chunks < 0 then
    raise exception 'host, pid, started_at and chunks: must be given (chunks 0 or more)' using errcode = '22023';
  end if;
  select l.pid into v_holder from worker_locks() as l where l.key = v_key;
  if v_holder is distinct from pg_backend_pid() and not pg_try_advisory_lock(v_key) then
    select * into v_live from workers as w where w.worker_id = worker_heartbeat.worker;
    raise exception 'worker %: is already running (%): give each worker its own id (chunks worker --id)', worker_heartbeat.worker,
      case when v_holder is null then 'its lock is held by a session whose role may not send heartbeats; pg_locks shows which'
           when v_live.worker_id is null then format('backend pid %s holds its lock', v_holder)
           else format('host %s, pid %s, since %s, backend pid %s', excerpt(v_live.host, true), v_live.pid, v_live.started_at, v_holder) end
      using errcode = '22023';
  end if;
  insert into workers as w (worker_id, host, pid, started_at, last_seen, chunks, state, reason)
  values (worker_heartbeat.worker, left(worker_heartbeat.host, 200), worker_heartbeat.pid, worker_heartbeat.started_at,
          clock_timestamp(), worker_heartbeat.chunks, worker_heartbeat.state, left(worker_heartbeat.reason, 1000))
  on conflict (worker_id) do update
     set host = excluded.host, pid = excluded.pid, started_at = excluded.started_at, last_seen = excluded.last_seen,
         chunks = excluded.chunks, state = excluded.state, reason = excluded.reason;
  -- Rows of workers not alive here go: a worker that died, or a row that
  -- came from another server (a promoted standby has the old primary's).
  delete from workers as w where worker_lock_key(w.worker_id) not in (select l.key from worker_locks() as l);
end
$$;
comment on function {{ .schema }}.worker_heartbeat(text, text, integer, timestamptz, bigint, text, text) is
$c$A worker's heartbeat: upserts its row in workers (host, pid, started_at, chunks committed so far,
state running / idle / throttled, and REASON when throttled) with last_seen = now. The calling
session takes the worker's lock (worker_lock_key) and keeps it until worker_gone or its end: that
session is what makes the worker alive. chunks worker calls it about once a second, on a
connection of its own. It deletes the rows of workers whose lock no session holds (dead, or copied
from another server). Errors: 22023 bad worker, state or a missing value, and a worker id whose
lock another session holds (a live worker of the same id, named).$c$;
