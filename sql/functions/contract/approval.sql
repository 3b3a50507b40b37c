-- The digest job_approval keeps of a job's targets: sha256 of their jsonb
-- text, which is one canonical text per jsonb value.
create or replace function {{ .schema }}.targets_text_sha256(targets_text text) returns text
language sql stable parallel safe
as $$
  select encode(sha256(convert_to(targets_text, 'UTF8')), 'hex')
$$;
comment on function {{ .schema }}.targets_text_sha256(text) is
  'chunks helper: targets_sha256 of the jsonb text of a target list (TARGETS_TEXT = targets::text), for a caller that made the text already.';

create or replace function {{ .schema }}.targets_sha256(targets jsonb) returns text
language sql stable parallel safe
as $$
  select {{ .schema }}.targets_text_sha256(targets::text)
$$;
comment on function {{ .schema }}.targets_sha256(jsonb) is
  'chunks helper: the sha256 (hex) of TARGETS'' jsonb text, as job_approval keeps it.';

-- The approval check (README "Roles"), in one place for run_chunk, report,
-- register and register_undo: NULL when the stored job (KIND, TENANT,
-- TARGETS, CHUNK_SIZE) is what register recorded in job_approval (the A_*
-- values; A_KIND NULL: no record), else what differs, in words. A plain SQL
-- expression so the planner inlines it (no SET clause; its callers pin
-- search_path). digest_approval_problem takes the targets' sha256 made by
-- the caller (run_chunk hashes the text it checked the shape of); it is
-- used once, so it inlines even when it is an expression, and the message
-- hashes the targets again (only when they differ).
create or replace function {{ .schema }}.digest_approval_problem(job_id text, kind text, tenant text, targets jsonb,
                                                                 targets_sha256 text, chunk_size integer, a_kind text,
                                                                 a_tenant text, a_targets_sha256 text, a_chunk_size integer)
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
    when targets_sha256 <> a_targets_sha256 then
      format('job %s: the stored job is no longer the registered approval: its targets were changed after register (sha256 %s, registered %s)',
             job_id, {{ .schema }}.targets_sha256(targets), a_targets_sha256)
  end
$$;
comment on function {{ .schema }}.digest_approval_problem(text, text, text, jsonb, text, integer, text, text, text, integer) is
  'chunks helper: approval_problem with the sha256 of TARGETS made by the caller (TARGETS_SHA256).';

create or replace function {{ .schema }}.approval_problem(job_id text, kind text, tenant text, targets jsonb, chunk_size integer,
                                                          a_kind text, a_tenant text, a_targets_sha256 text, a_chunk_size integer)
returns text
language sql stable parallel safe
as $$
  select {{ .schema }}.digest_approval_problem(job_id, kind, tenant, targets, {{ .schema }}.targets_sha256(targets), chunk_size,
                                                a_kind, a_tenant, a_targets_sha256, a_chunk_size)
$$;
comment on function {{ .schema }}.approval_problem(text, text, text, jsonb, integer, text, text, text, integer) is
  'chunks helper: NULL when a stored job (KIND, TENANT, TARGETS, CHUNK_SIZE) is the approval job_approval recorded (A_*; A_KIND NULL: no record), else the first difference in words: no record, kind, tenant, chunk_size, targets.';
