-- verify (docs/contract.md "What verify proves"): the whole proof of a
-- job's record that a chunk of a declared change does not repeat at every
-- chunk: report's checks (change_report_job): the stored targets are
-- still the approval (their sha256, kind, tenant, chunk size), the change
-- still the definition approved, the audit exactly targets[0:next_index]
-- by ordinal and key, and, for a declared change's job, its chunks
-- (change_chunks) one after another up to next_index. Read-only.
create or replace function {{ .schema }}.verify_job(job_id text) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
set jit = off
as $$
declare
  v_problem text;
  v_shape record;
begin
  perform check_name(verify_job.job_id, 'job_id');
  select s.targets, s.chunk_size, s.next_index, s.in_rows into v_shape from job_shapes as s where s.job_id = verify_job.job_id;
  if not found then
    raise exception 'job %: not found', verify_job.job_id using errcode = 'CH409';
  end if;
  begin
    perform change_report_job(verify_job.job_id);
  exception when sqlstate 'CH409' then
    get stacked diagnostics v_problem = message_text;
  end;
  return jsonb_build_object('job_id', verify_job.job_id, 'sound', v_problem is null, 'problem', v_problem,
                            'targets', v_shape.targets, 'chunk_size', v_shape.chunk_size, 'next_index', v_shape.next_index,
                            'chunks', case when v_shape.in_rows
                                           then (select count(*) from change_chunks as c where c.job_id = verify_job.job_id) end);
end
$$;
comment on function {{ .schema }}.verify_job(text) is
$c$The whole proof of job JOB_ID's record, read-only: its stored targets still the approval
(sha256, kind, tenant, chunk size), its change still the definition approved, its audit exactly
targets[0:next_index] by ordinal and key, and for a job of a declared change its chunks
(change_chunks) one after another up to next_index. Returns {"job_id", "sound", "problem" (NULL
when sound: else report's words), "targets", "chunk_size", "next_index", "chunks" (committed
chunks of a declared change's job; NULL for orders)}. Errors: 22023 bad job_id; CH409 unknown job.$c$;

-- verify of every job of campaign NAME, in its order: {"name", "jobs",
-- "sound", "targets", "committed", "unsound": [{job_id, problem}]}.
create or replace function {{ .schema }}.verify_campaign(name text) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
set jit = off
as $$
declare
  v_result jsonb;
begin
  perform check_name(verify_campaign.name, 'name');
  if not exists (select from campaigns as c where c.name = verify_campaign.name) then
    raise exception 'campaign %: not found', verify_campaign.name using errcode = 'CH409';
  end if;
  select jsonb_build_object('name', verify_campaign.name, 'jobs', count(*),
                            'sound', count(*) filter (where not (v.r ->> 'sound')::boolean) = 0,
                            'targets', coalesce(sum((v.r ->> 'targets')::bigint), 0),
                            'committed', coalesce(sum((v.r ->> 'next_index')::bigint), 0),
                            'unsound', coalesce(jsonb_agg(jsonb_build_object('job_id', v.r ->> 'job_id', 'problem', v.r ->> 'problem')
                                                          order by v.seq) filter (where not (v.r ->> 'sound')::boolean), '[]'::jsonb))
    into v_result
    -- (offset 0: each job verified once; pulled up, verify_job ran once per
    -- use of r below, four times a job)
    from (select cj.seq, verify_job(cj.job_id) as r
            from campaign_jobs as cj
           where cj.campaign = verify_campaign.name
          offset 0) as v;
  return v_result;
end
$$;
comment on function {{ .schema }}.verify_campaign(text) is
$c$verify_job of every job of campaign NAME, read-only: {"name", "jobs", "sound" (every job is),
"targets", "committed", "unsound": [{"job_id", "problem"}, ...] in the campaign's order}.
Errors: 22023 bad name; CH409 unknown campaign.$c$;
