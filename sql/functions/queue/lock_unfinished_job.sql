-- Fleet mode: the check pause_job and resume_job share. FOR SHARE waits for
-- a chunk in flight (run_chunk holds the job row FOR UPDATE), so "done" is
-- judged on committed progress and the job cannot finish between this check
-- and the caller's queue write.
create or replace function {{ .schema }}.lock_unfinished_job(job_id text, action text) returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_n integer;
  v_next_index integer;
  v_end record;
begin
  perform check_name(lock_unfinished_job.job_id, 'job_id');
  perform from jobs as j where j.job_id = lock_unfinished_job.job_id for share;
  if not found then
    raise exception 'job %: not found', lock_unfinished_job.job_id using errcode = 'CH409';
  end if;
  select e.abandoned_by, e.abandoned_at, e.reason into v_end from job_ends as e where e.job_id = lock_unfinished_job.job_id;
  if found then
    raise exception 'job %: abandoned by % at % (%); nothing to %', lock_unfinished_job.job_id, v_end.abandoned_by,
      v_end.abandoned_at, v_end.reason, lock_unfinished_job.action using errcode = 'CH409';
  end if;
  select s.targets, s.next_index into v_n, v_next_index from job_shapes as s where s.job_id = lock_unfinished_job.job_id;
  if v_next_index >= v_n then
    raise exception 'job %: already done (next_index % of %); nothing to %', lock_unfinished_job.job_id,
      v_next_index, v_n, lock_unfinished_job.action using errcode = 'CH409';
  end if;
end
$$;
comment on function {{ .schema }}.lock_unfinished_job(text, text) is
  'chunks helper: locks job JOB_ID FOR SHARE (waiting for a chunk in flight) and raises CH409 when it is unknown, abandoned (abandon_job) or already done, naming ACTION.';
