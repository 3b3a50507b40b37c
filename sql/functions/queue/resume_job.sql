-- Fleet mode: an operator gives a job back to the fleet.
create or replace function {{ .schema }}.resume_job(job_id text) returns boolean
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '5s'
as $$
#variable_conflict use_column
begin
  perform check_name(resume_job.job_id, 'job_id');
  -- Locks in run_next_chunk's order: the queue row, then the job row.
  perform from job_queue as q where q.job_id = resume_job.job_id for update;
  perform lock_unfinished_job(resume_job.job_id, 'resume');
  perform check_not_undone(resume_job.job_id, 'resume');
  -- A paused job is queued again, visible now (behind every job already
  -- waiting), and its pause reason is cleared; an unfinished job that has
  -- no queue row at all (idle) gets one. It runs to its end: a canary
  -- still pending (pause_after) is dropped.
  insert into job_queue as q (job_id, visible_at)
  values (resume_job.job_id, clock_timestamp())
  on conflict (job_id) do update
     set paused = false, visible_at = case when q.paused then clock_timestamp() else q.visible_at end,
         pause_reason = null, paused_at = null, paused_by = null, pause_after = null
   where q.paused or q.pause_after is not null;
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
queued too. It then runs to its end: a pending canary (pause_job_after) is dropped.
Returns true when it changed the queue, false when the job was already queued with no
canary. Lock waits are bounded at 5 s.
Errors: 22023 bad job_id; CH409 unknown job, a job that is already done, or a job that was
undone (register_undo).$c$;

-- The signature of a router (the template is tenant_call.sql): the job of one tenant.
{{ template "common/tenant_call.sql" (merge (dict "name" "resume_job" "returns" "boolean" "volatility" "volatile" "missing" "conflict"
  "settings" (list "lock_timeout = '5s'")
  "comment" `gives it back to the workers.`) .) }}
