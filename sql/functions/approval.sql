-- The digest job_approval keeps of a job's targets: sha256 of their jsonb
-- text, which is one canonical text per jsonb value.
create or replace function {{ .schema }}.targets_sha256(targets jsonb) returns text
language sql stable parallel safe
as $$
  select encode(sha256(convert_to(targets::text, 'UTF8')), 'hex')
$$;
comment on function {{ .schema }}.targets_sha256(jsonb) is
  'chunks helper: the sha256 (hex) of TARGETS'' jsonb text, as job_approval keeps it.';

-- The approval check (README "Roles"), in one place for run_chunk, report,
-- register and register_undo: NULL when the stored job (KIND, TENANT,
-- TARGETS, CHUNK_SIZE) is what register recorded in job_approval (the A_*
-- values; A_KIND NULL: no record), else what differs, in words. A plain SQL
-- expression so the planner inlines it (no SET clause; its callers pin
-- search_path).
create or replace function {{ .schema }}.approval_problem(job_id text, kind text, tenant text, targets jsonb, chunk_size integer,
                                                          a_kind text, a_tenant text, a_targets_sha256 text, a_chunk_size integer)
returns text
language sql stable parallel safe
as $$
  select case
    when a_kind is null then
      format('job %s: was never registered through chunks (job_approval has no record of it): a job row written by hand is not an approval', job_id)
    when kind <> a_kind then
      format('job %s: the stored job is no longer the registered approval: its kind is %s, registered %s', job_id, kind, a_kind)
    when tenant <> a_tenant then
      format('job %s: the stored job is no longer the registered approval: its tenant is %s, registered %s',
             job_id, {{ .schema }}.excerpt(tenant, true), {{ .schema }}.excerpt(a_tenant, true))
    when chunk_size <> a_chunk_size then
      format('job %s: the stored job is no longer the registered approval: its chunk_size is %s, registered %s', job_id, chunk_size, a_chunk_size)
    when {{ .schema }}.targets_sha256(targets) <> a_targets_sha256 then
      format('job %s: the stored job is no longer the registered approval: its targets were changed after register (sha256 %s, registered %s)',
             job_id, {{ .schema }}.targets_sha256(targets), a_targets_sha256)
  end
$$;
comment on function {{ .schema }}.approval_problem(text, text, text, jsonb, integer, text, text, text, integer) is
  'chunks helper: NULL when a stored job (KIND, TENANT, TARGETS, CHUNK_SIZE) is the approval job_approval recorded (A_*; A_KIND NULL: no record), else the first difference in words: no record, kind, tenant, chunk_size, targets.';
