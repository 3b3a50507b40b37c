-- Fleet mode: an operator stops the fleet from taking a job.
create or replace function {{ .schema }}.pause_job(job_id text) returns boolean
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
#variable_conflict use_column
declare
  v_n integer;
  v_next_index integer;
begin
  perform check_name(pause_job.job_id, 'job_id');
  -- FOR SHARE waits for a chunk in flight (run_chunk holds the row FOR
  -- UPDATE), so "done" is judged on committed progress and a job cannot
  -- finish between this check and the queue write.
  select case when jsonb_typeof(j.targets) = 'array' then jsonb_array_length(j.targets) end, j.next_index
    into v_n, v_next_index
    from jobs as j
   where j.job_id = pause_job.job_id
     for share;
  if not found then
    raise exception 'job %: not found', pause_job.job_id using errcode = 'CH409';
  end if;
  if v_next_index >= v_n then
    raise exception 'job %: already done (next_index % of %); nothing to pause', pause_job.job_id, v_next_index, v_n
      using errcode = 'CH409';
  end if;
  insert into job_queue as q (job_id, visible_at, paused)
  values (pause_job.job_id, clock_timestamp(), true)
  on conflict (job_id) do update set paused = true where not q.paused;
  return found;
end
$$;
comment on function {{ .schema }}.pause_job(text) is
$c$Pauses a job: the fleet never claims it again until resume_job. A chunk in flight finishes
(this waits for it), and a worker that claimed the job just before may still run that one
chunk. Returns true when it paused the job, false when it was already paused.
Errors: 22023 bad job_id; CH409 unknown job, or a job that is already done.$c$;
