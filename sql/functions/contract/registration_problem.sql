-- register's identity rule, in one place for register and check_plan: why
-- an approval (TENANT, normalized TARGETS, CHUNK_SIZE) cannot be registered
-- under JOB_ID, which is already taken by a job of KIND (undoing UNDOES,
-- for an undo; 'change' for a job of a declared change) with the stored tenant, targets and chunk_size (the
-- STORED_* values), or NULL when it is the same approval (register is
-- then a no-op). A job row without an approval record (APPROVED false:
-- written by hand) is never the same approval. The first difference is
-- named: kind, tenant, chunk_size, targets. A plain SQL expression so the planner inlines it (no SET
-- clause; STABLE as format() is; its callers pin search_path).
create or replace function {{ .schema }}.registration_problem(job_id text, kind text, undoes text, stored_tenant text,
                                                              stored_targets jsonb, stored_chunk_size integer, approved boolean,
                                                              tenant text, targets jsonb, chunk_size integer)
returns text
language sql stable parallel safe
as $$
  select case
    when job_id is not null and not approved then
      format('job %s: a job row with this id exists but was never registered through chunks (job_approval has no record of it)', job_id)
    when kind = 'change' then format('job %s: already registered as a job of a declared change (register_change)', job_id)
    when kind is distinct from 'cancel' then
      format('job %s: already registered as the undo of %s', job_id, coalesce(undoes, 'another job'))
    when stored_tenant <> tenant then
      format('job %s: already registered for tenant %s, not %s', job_id, {{ .schema }}.excerpt(stored_tenant, true), {{ .schema }}.excerpt(tenant, true))
    when stored_chunk_size <> chunk_size then
      format('job %s: already registered with chunk_size %s, not %s', job_id, stored_chunk_size, chunk_size)
    when stored_targets <> targets then format('job %s: already registered with different targets', job_id)
  end
$$;
comment on function {{ .schema }}.registration_problem(text, text, text, text, jsonb, integer, boolean, text, jsonb, integer) is
  'chunks helper: NULL when the approval (TENANT, TARGETS, CHUNK_SIZE) is the one JOB_ID is already registered with (a cancel job with its approval recorded), else the conflict in words: no approval record, or the first difference of kind, tenant, chunk_size or targets.';
