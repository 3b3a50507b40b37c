-- Fleet mode: a worker says it is alive and what it is doing.
create or replace function {{ .schema }}.worker_heartbeat(worker text, host text, pid integer, started_at timestamptz,
                                                          chunks bigint, state text, reason text) returns void
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
as $$
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
  insert into workers as w (worker_id, host, pid, started_at, last_seen, chunks, state, reason)
  values (worker_heartbeat.worker, left(worker_heartbeat.host, 200), worker_heartbeat.pid, worker_heartbeat.started_at,
          clock_timestamp(), worker_heartbeat.chunks, worker_heartbeat.state, left(worker_heartbeat.reason, 1000))
  on conflict (worker_id) do update
     set host = excluded.host, pid = excluded.pid, started_at = excluded.started_at, last_seen = excluded.last_seen,
         chunks = excluded.chunks, state = excluded.state, reason = excluded.reason;
  -- Rows of workers that died long ago go; the table stays small.
  delete from workers as w where w.last_seen < clock_timestamp() - interval '1 day';
end
$$;
comment on function {{ .schema }}.worker_heartbeat(text, text, integer, timestamptz, bigint, text, text) is
$c$A worker's heartbeat: upserts its row in workers (host, pid, started_at, chunks committed so far,
state running / idle / throttled, and REASON when throttled) with last_seen = now. chunks worker
calls it about once a second; worker_status shows the rows seen in the last 10 s. Rows not seen
for a day are deleted. Errors: 22023 bad worker, state or a missing value.$c$;
