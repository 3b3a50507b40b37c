-- register_change's identity rule, in one place for register_change and
-- check_change: why an approval (TENANT, normalized TARGETS, CHUNK_SIZE) of
-- change CHANGE (its definition's DIGEST) cannot be registered under
-- JOB_ID, or NULL when JOB_ID is free or already holds the same approval
-- (the caller tells those apart).
create or replace function {{ .schema }}.change_job_problem(job_id text, change text, digest text, tenant text,
                                                            targets jsonb, chunk_size integer)
returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select case
           when jc.job_id is null then format('job %s: already registered, not as a job of change %s', j.job_id, change_job_problem.change)
           when jc.change <> change_job_problem.change then
             format('job %s: already registered as a job of change %s, not %s', j.job_id, jc.change, change_job_problem.change)
           when jc.digest <> change_job_problem.digest then
             format('job %s: already registered under another definition of change %s', j.job_id, change_job_problem.change)
           else {{ .schema }}.registration_problem(j.job_id, 'cancel', null, j.tenant, j.targets, j.chunk_size, ap.kind = 'change',
                                                   change_job_problem.tenant, change_job_problem.targets,
                                                   change_job_problem.chunk_size)
         end
    from {{ .schema }}.jobs as j
    left join {{ .schema }}.job_change as jc on jc.job_id = j.job_id
    left join {{ .schema }}.job_approval as ap on ap.job_id = j.job_id
   where j.job_id = change_job_problem.job_id
$$;
comment on function {{ .schema }}.change_job_problem(text, text, text, text, jsonb, integer) is
  'chunks helper: NULL when JOB_ID is free or holds this same approval of change CHANGE (DIGEST, TENANT, TARGETS, CHUNK_SIZE), else the conflict in words (not a job of this change, another definition, or register''s tenant/chunk_size/targets difference).';
