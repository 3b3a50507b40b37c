-- CONTRACT §4's cheap half, for run_chunk and register_undo: why a stored
-- job's row cannot be sound, in words, or NULL. targets_look_normal is the
-- fast guard on the targets' shape; when it fails, job_problem (slow, run
-- only then) names what is wrong with the same words as the input checks.
-- Then the tenant, the chunk size and next_index: 0 <= next_index <= n, on
-- a chunk boundary unless it is n. The audit is the caller's to check. A
-- plain SQL expression so the planner inlines it into the caller's
-- expression (no SET clause; STABLE as format() is; its callers pin
-- search_path, and the chunks functions it calls are named in full).
-- TARGETS_TEXT is targets::text, made once by a caller that also hashes it
-- (run_chunk); job_shape_problem below makes it itself.
create or replace function {{ .schema }}.job_text_shape_problem(job_id text, tenant text, targets jsonb, targets_text text,
                                                                chunk_size integer, next_index integer)
returns text
language sql stable parallel safe
as $$
  select case
    when not {{ .schema }}.targets_text_look_normal(targets_text) or jsonb_array_length(targets) > {{ .schema }}.limit_of('targets_max') then
      coalesce({{ .schema }}.job_problem(job_id, targets, next_index), 'the stored job is not sound')
    when not {{ .schema }}.is_name(tenant) then format('stored tenant %s is not valid', {{ .schema }}.excerpt(tenant, true))
    when not {{ .schema }}.in_range('chunk_size', chunk_size) then
      format('stored chunk_size %s is not between %s and %s', chunk_size, {{ .schema }}.limit_of('chunk_size_min'),
             {{ .schema }}.limit_of('chunk_size_max'))
    when next_index > jsonb_array_length(targets) then
      format('next_index %s is beyond the %s targets', next_index, jsonb_array_length(targets))
    when next_index % chunk_size <> 0 and next_index <> jsonb_array_length(targets) then
      format('next_index %s is not a multiple of chunk_size %s', next_index, chunk_size)
  end
$$;
comment on function {{ .schema }}.job_text_shape_problem(text, text, jsonb, text, integer, integer) is
  'chunks helper: job_shape_problem of a stored job whose targets'' jsonb text (TARGETS_TEXT = targets::text) the caller made already.';

create or replace function {{ .schema }}.job_shape_problem(job_id text, tenant text, targets jsonb, chunk_size integer,
                                                           next_index integer)
returns text
language sql stable parallel safe
as $$
  select {{ .schema }}.job_text_shape_problem(job_id, tenant, targets, targets::text, chunk_size, next_index)
$$;
comment on function {{ .schema }}.job_shape_problem(text, text, jsonb, integer, integer) is
  'chunks helper: NULL unless the stored job''s row breaks CONTRACT §4 (targets'' shape, tenant, chunk_size, next_index within 0..n on a chunk boundary), else why, in words; the audit is checked by the caller.';
