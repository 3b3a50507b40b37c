-- A new job, recorded as register and register_change record one, in one
-- place: its row (next_index 0), its approval (job_approval, of KIND,
-- RECORDED_FROM), and its place in the fleet's queue, visible at once, with
-- queue_channel() notified, all in the caller's transaction. A job of a
-- declared change (IN_ROWS) keeps its targets and chunk size in change_jobs
-- and change_targets, one row per target; its jobs row is its registry row
-- (targets {"change_targets": N}, chunk_size 1; migration 011). Returns
-- false and writes nothing when JOB_ID is taken (the caller says why).
-- Input already validated.
drop function if exists {{ .schema }}.record_job(text, text, jsonb, integer, text, text);
create or replace function {{ .schema }}.record_job(job_id text, tenant text, targets jsonb, chunk_size integer,
                                                    kind text, recorded_from text, in_rows boolean) returns boolean
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  insert into jobs as j (job_id, tenant, targets, chunk_size, next_index)
  values (record_job.job_id, record_job.tenant,
          case when record_job.in_rows then jsonb_build_object('change_targets', jsonb_array_length(record_job.targets))
               else record_job.targets end,
          case when record_job.in_rows then 1 else record_job.chunk_size end, 0)
  on conflict on constraint jobs_pkey do nothing;
  if not found then
    return false;
  end if;
  if record_job.in_rows then
    insert into change_jobs (job_id, chunk_size, targets)
    values (record_job.job_id, record_job.chunk_size, jsonb_array_length(record_job.targets));
    insert into change_targets (job_id, ordinal, target)
    select record_job.job_id, (x.ord - 1)::integer, x.e
      from jsonb_array_elements(record_job.targets) with ordinality as x(e, ord);
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
comment on function {{ .schema }}.record_job(text, text, jsonb, integer, text, text, boolean) is
  'chunks helper: records a new job (jobs, job_approval of KIND from RECORDED_FROM, job_queue, notify queue_channel(); IN_ROWS, a declared change''s job: its targets and chunk size in change_jobs and change_targets) for register, register_change and register_undo; false, writing nothing, when JOB_ID is taken.';

-- register and register_change, in one place, for an approval already
-- validated (PLAN: job_id, tenant, normalized targets, chunk_size) of
-- change CHANGE (its definition's DIGEST; both NULL for the contract's
-- cancellation of orders): a new job is recorded (record_job; a job of a
-- declared change also records its change, job_change) and true returned;
-- the same approval again is false, changing nothing (progress is never
-- touched); anything else under the id is CH409 in register's words
-- (job_identity_problem).
create or replace function {{ .schema }}.register_job(change text, digest text, plan jsonb) returns boolean
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_job_id text := register_job.plan ->> 'job_id';
  v_problem text;
begin
  if record_job(v_job_id, register_job.plan ->> 'tenant', register_job.plan -> 'targets', (register_job.plan -> 'chunk_size')::integer,
                case when register_job.change is null then 'cancel' else 'change' end,
                case when register_job.change is null then 'register' else 'register_change' end,
                register_job.change is not null) then
    if register_job.change is not null then
      insert into job_change (job_id, change, digest) values (v_job_id, register_job.change, register_job.digest);
    end if;
    -- Two people: a proposal, when the policy says so (docs/safety.md).
    perform propose_jobs(array[v_job_id], register_job.change, false);
    return true;
  end if;
  -- The id is taken: the same approval again is not an error, anything else is.
  v_problem := job_identity_problem(v_job_id, register_job.change, register_job.digest, register_job.plan ->> 'tenant',
                                    register_job.plan -> 'targets', (register_job.plan -> 'chunk_size')::integer);
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'CH409';
  end if;
  if not exists (select from jobs as j where j.job_id = v_job_id) then
    raise exception 'job %: was removed while registering', v_job_id using errcode = 'CH409';
  end if;
  return false;
end
$$;
comment on function {{ .schema }}.register_job(text, text, jsonb) is
  'chunks helper (register, register_change): records the validated approval PLAN of change CHANGE (DIGEST; both NULL for orders): true when new, false when the same approval is already there, CH409 for anything else under its id.';
