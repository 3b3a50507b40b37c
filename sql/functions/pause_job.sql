-- Fleet mode: an operator stops the fleet from taking a job.
create or replace function {{ .schema }}.pause_job(job_id text) returns boolean
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
#variable_conflict use_column
begin
  perform lock_unfinished_job(pause_job.job_id, 'pause');
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
