-- Fleet mode: a worker that stops cleanly takes its row away, and only its
-- own: the session must hold the worker's lock (worker_heartbeat took it),
-- so a stale stop never deletes the row of a live worker with that id.
create or replace function {{ .schema }}.worker_gone(worker text) returns boolean
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_key constant bigint := worker_lock_key(worker_gone.worker);
  v_gone boolean;
begin
  if not exists (select from worker_locks() as l where l.key = v_key and l.pid = pg_backend_pid()) then
    return false;
  end if;
  delete from workers as w where w.worker_id = worker_gone.worker;
  v_gone := found;
  perform pg_advisory_unlock(v_key);
  return v_gone;
end
$$;
comment on function {{ .schema }}.worker_gone(text) is
$c$Deletes the heartbeat row of WORKER (it stopped cleanly) and releases its lock, when this session
holds that lock (it sent the worker's heartbeats); returns whether a row was deleted. From any
other session it changes nothing and returns false.$c$;
