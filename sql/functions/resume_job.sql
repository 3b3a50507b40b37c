-- Fleet mode: an operator gives a job back to the fleet.
create or replace function {{ .schema }}.resume_job(job_id text) returns boolean
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '5s'
as $$
#variable_conflict use_column
begin
  perform check_name(resume_job.job_id, 'job_id');
  -- Locks in run_next_chunk's order: the queue row, then the job row.
  perform from job_queue as q where q.job_id = resume_job.job_id for update;
  perform lock_unfinished_job(resume_job.job_id, 'resume');
  -- A paused job is queued again, visible now (behind every job already
  -- waiting), and its pause reason is cleared; an unfinished job that has
  -- no queue row at all (idle) gets one.
  insert into job_queue as q (job_id, visible_at)
  values (resume_job.job_id, clock_timestamp())
  on conflict (job_id) do update
     set paused = false, visible_at = clock_timestamp(), pause_reason = null, paused_at = null, paused_by = null
   where q.paused;
  if not found then
    return false;
  end if;
  perform pg_notify(queue_channel(), resume_job.job_id);
  return true;
end
$$;
comment on function {{ .schema }}.resume_job(text) is
$c$Gives a paused job back to the fleet: it is queued again, visible now, its pause reason is
cleared, and queue_channel() is notified. An unfinished job with no queue row (idle) is
queued too. Returns true when it queued the job, false when it was neither paused nor idle
(already queued). Lock waits are bounded at 5 s.
Errors: 22023 bad job_id; CH409 unknown job, or a job that is already done.$c$;
