-- report's checks, for every job: it must be sound (readable targets and
-- next_index, its audit exactly targets[0:next_index]; for a declared
-- change's job, its chunks too: verify's whole proof), still its
-- approval, and its change the definition it was approved under (CH409,
-- as run_chunk says; for a job of orders, no job_change, in the
-- contract's words). Returns that definition: orders_change() for orders.
create or replace function {{ .schema }}.change_report_job(job_id text) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_job record;
  v_problem text;
  v_def jsonb;
begin
  select j.job_id, j.tenant, job_targets(j.job_id) as targets, s.chunk_size, j.next_index, jc.change, c.definition,
         coalesce(k.kind, case when jc.job_id is null then 'cancel' else 'change' end) as kind,
         ap.kind as a_kind, ap.tenant as a_tenant, ap.targets_sha256 as a_targets_sha256, ap.chunk_size as a_chunk_size
    into v_job
    from jobs as j
    join job_shapes as s on s.job_id = j.job_id
    left join job_change as jc on jc.job_id = j.job_id
    left join changes as c on c.name = jc.change and c.digest = jc.digest
    left join job_kind as k on k.job_id = j.job_id
    left join job_approval as ap on ap.job_id = j.job_id
   where j.job_id = change_report_job.job_id;
  if not found then
    raise exception 'job %: not found', change_report_job.job_id using errcode = 'CH409';
  end if;
  -- Targets and next_index that cannot be read as a list of approvals and
  -- a prefix of it are not reported on (for orders, in the contract's words).
  if v_job.change is null and not (targets_look_normal(v_job.targets) and v_job.next_index <= jsonb_array_length(v_job.targets)) then
    raise exception 'job %: %', v_job.job_id,
      case when targets_look_normal(v_job.targets)
           then format('next_index %s is beyond the %s targets', v_job.next_index, jsonb_array_length(v_job.targets))
           else coalesce(job_problem(v_job.job_id, v_job.targets, v_job.next_index), 'the stored job is not sound')
      end using errcode = 'CH409';
  end if;
  if jsonb_typeof(v_job.targets) is distinct from 'array' or v_job.next_index not between 0 and jsonb_array_length(v_job.targets) then
    raise exception 'job %: the stored job is not sound', v_job.job_id using errcode = 'CH409';
  end if;
  -- Nor is a job that is no longer its registered approval: "matching"
  -- would be measured against targets nobody approved.
  v_problem := approval_problem(v_job.job_id, v_job.kind, v_job.tenant, v_job.targets, v_job.chunk_size,
                                v_job.a_kind, v_job.a_tenant, v_job.a_targets_sha256, v_job.a_chunk_size);
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'CH409';
  end if;
  if v_job.change is null then
    v_def := orders_change();
  elsif v_job.definition is null then
    raise exception 'job %: its change % was redefined or dropped since it was approved', v_job.job_id, v_job.change
      using errcode = 'CH409';
  else
    v_def := v_job.definition;
  end if;
  -- Its audit is exactly targets[0:next_index] (docs/contract.md §4, as
  -- run_chunk proves it): report judges each committed target by its row.
  v_problem := case when v_job.change is null then job_problem(v_job.job_id, v_job.targets, v_job.next_index)
                    else change_audit_problem(v_job.job_id, v_def, v_job.targets, v_job.next_index) end;
  if v_problem is not null then
    raise exception 'job %: %', v_job.job_id, v_problem using errcode = 'CH409';
  end if;
  return v_def;
end
$$;
comment on function {{ .schema }}.change_report_job(text) is
  'chunks helper (report): the definition a job was approved under (orders_change() for a job of orders), after report''s checks: CH409 when the job is not found, not sound, not its approval, or its change was redefined or dropped.';
