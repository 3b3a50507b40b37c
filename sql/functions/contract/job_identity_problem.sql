-- register's identity rule, in one place for register, register_change,
-- check_plan and check_change: why an approval (TENANT, normalized
-- TARGETS, CHUNK_SIZE) of change CHANGE (its definition's DIGEST; both
-- NULL for the contract's cancellation of orders) cannot be registered
-- under JOB_ID, or NULL when JOB_ID is free or already holds the same
-- approval (the caller tells those apart). The words are register's
-- (registration_problem) and, for a job of a declared change, which
-- change and which definition.
drop function if exists {{ .schema }}.change_job_problem(text, text, text, text, jsonb, integer);
create or replace function {{ .schema }}.job_identity_problem(job_id text, change text, digest text, tenant text,
                                                              targets jsonb, chunk_size integer)
returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select case
           when job_identity_problem.change is null then
             {{ .schema }}.registration_problem(j.job_id, coalesce(k.kind, ap.kind, 'cancel'), k.undoes, j.tenant, j.targets,
                                               s.chunk_size, ap.job_id is not null, job_identity_problem.tenant,
                                               job_identity_problem.targets, job_identity_problem.chunk_size)
           when jc.job_id is null then format('job %s: already registered, not as a job of change %s', j.job_id, job_identity_problem.change)
           when jc.change <> job_identity_problem.change then
             format('job %s: already registered as a job of change %s, not %s', j.job_id, jc.change, job_identity_problem.change)
           when jc.digest <> job_identity_problem.digest then
             format('job %s: already registered under another definition of change %s', j.job_id, job_identity_problem.change)
           else {{ .schema }}.registration_problem(j.job_id, 'cancel', null, j.tenant, {{ .schema }}.job_targets(j.job_id),
                                                   s.chunk_size, ap.kind = 'change',
                                                   job_identity_problem.tenant, job_identity_problem.targets,
                                                   job_identity_problem.chunk_size)
         end
    from {{ .schema }}.jobs as j
    join {{ .schema }}.job_shapes as s on s.job_id = j.job_id
    left join {{ .schema }}.job_kind as k on k.job_id = j.job_id
    left join {{ .schema }}.job_change as jc on jc.job_id = j.job_id
    left join {{ .schema }}.job_approval as ap on ap.job_id = j.job_id
   where j.job_id = job_identity_problem.job_id
$$;
comment on function {{ .schema }}.job_identity_problem(text, text, text, text, jsonb, integer) is
  'chunks helper: NULL when JOB_ID is free or holds this same approval of change CHANGE (DIGEST; both NULL for orders) with TENANT, TARGETS, CHUNK_SIZE, else the conflict in register''s words (another kind of job, not a job of this change, another definition, or the tenant/chunk_size/targets difference).';
