-- Fleet mode: a worker that stops cleanly takes its row away.
create or replace function {{ .schema }}.worker_gone(worker text) returns boolean
language sql volatile security definer
set search_path = {{ .schema }}, pg_temp
as $$
  with gone as (delete from workers as w where w.worker_id = worker_gone.worker returning 1)
  select exists (select from gone)
$$;
comment on function {{ .schema }}.worker_gone(text) is
  'Deletes the heartbeat row of WORKER (it stopped cleanly); returns whether there was one.';
