-- report's checks for a job of a declared change (job_change), for
-- report_change and campaign_change_report: the job must be sound, still
-- its approval, and its change the definition it was approved under (CH409,
-- as run_chunk says). Returns that definition.
create or replace function {{ .schema }}.change_report_job(job_id text) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_job record;
  v_problem text;
  v_def jsonb;
begin
  select j.job_id, j.tenant, j.targets, j.chunk_size, j.next_index, jc.change, jc.digest,
         case when k.kind = 'restore' then 'restore' else 'change' end as kind,
         ap.kind as a_kind, ap.tenant as a_tenant, ap.targets_sha256 as a_targets_sha256, ap.chunk_size as a_chunk_size
    into v_job
    from jobs as j
    join job_change as jc on jc.job_id = j.job_id
    left join job_kind as k on k.job_id = j.job_id
    left join job_approval as ap on ap.job_id = j.job_id
   where j.job_id = change_report_job.job_id;
  if not found then
    raise exception 'job %: not found', change_report_job.job_id using errcode = 'CH409';
  end if;
  if jsonb_typeof(v_job.targets) is distinct from 'array' or v_job.next_index not between 0 and jsonb_array_length(v_job.targets) then
    raise exception 'job %: the stored job is not sound', v_job.job_id using errcode = 'CH409';
  end if;
  v_problem := approval_problem(v_job.job_id, v_job.kind, v_job.tenant, v_job.targets, v_job.chunk_size,
                                v_job.a_kind, v_job.a_tenant, v_job.a_targets_sha256, v_job.a_chunk_size);
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'CH409';
  end if;
  select c.definition into v_def from changes as c where c.name = v_job.change and c.digest = v_job.digest;
  if not found then
    raise exception 'job %: its change % was redefined or dropped since it was approved', v_job.job_id, v_job.change
      using errcode = 'CH409';
  end if;
  return v_def;
end
$$;
comment on function {{ .schema }}.change_report_job(text) is
  'chunks helper (report_change, campaign_change_report): the definition a job of a declared change was approved under, after report''s checks: CH409 when the job is not found, not sound, not its approval, or its change was redefined or dropped.';
