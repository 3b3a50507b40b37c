-- A new job, recorded as register and register_change record one, in one
-- place: its row (next_index 0), its approval (job_approval, of KIND,
-- RECORDED_FROM), and its place in the fleet's queue, visible at once, with
-- queue_channel() notified, all in the caller's transaction. Returns false
-- and writes nothing when JOB_ID is taken (the caller says why). Input
-- already validated.
create or replace function {{ .schema }}.record_job(job_id text, tenant text, targets jsonb, chunk_size integer,
                                                    kind text, recorded_from text) returns boolean
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  insert into jobs as j (job_id, tenant, targets, chunk_size, next_index)
  values (record_job.job_id, record_job.tenant, record_job.targets, record_job.chunk_size, 0)
  on conflict on constraint jobs_pkey do nothing;
  if not found then
    return false;
  end if;
  -- What was approved, kept where only the owner writes (job_approval):
  -- run_chunk and report refuse the job if its row is changed later.
  insert into job_approval (job_id, kind, tenant, chunk_size, targets_sha256, recorded_from)
  values (record_job.job_id, record_job.kind, record_job.tenant, record_job.chunk_size,
          targets_sha256(record_job.targets), record_job.recorded_from);
  -- Fleet mode: a new job is runnable in the same commit that records it,
  -- and the workers listening on queue_channel() hear of it then.
  insert into job_queue (job_id, visible_at) values (record_job.job_id, clock_timestamp());
  perform pg_notify(queue_channel(), record_job.job_id);
  return true;
end
$$;
comment on function {{ .schema }}.record_job(text, text, jsonb, integer, text, text) is
  'chunks helper: records a new job (jobs, job_approval of KIND from RECORDED_FROM, job_queue, notify queue_channel()) for register and register_change; false, writing nothing, when JOB_ID is taken.';
