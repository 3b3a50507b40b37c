-- Where a job's targets and chunk size are, in one place for every reader:
-- an orders job keeps them in its jobs row (the contract's), a declared
-- change's job in change_jobs and change_targets (migration 011), its jobs
-- row holding {"change_targets": N} and chunk_size 1.

-- job_shapes: each job's size (TARGETS: how many; NULL when its stored
-- targets are not a list), approved CHUNK_SIZE and NEXT_INDEX, whichever
-- table keeps them; IN_ROWS for a declared change's job.
create or replace view {{ .schema }}.job_shapes as
select j.job_id, j.tenant, j.next_index,
       coalesce(cj.targets, case when jsonb_typeof(j.targets) = 'array' then jsonb_array_length(j.targets) end) as targets,
       coalesce(cj.chunk_size, j.chunk_size) as chunk_size,
       cj.job_id is not null as in_rows
  from {{ .schema }}.jobs as j
  left join {{ .schema }}.change_jobs as cj on cj.job_id = j.job_id;
comment on view {{ .schema }}.job_shapes is
  'chunks helper: each job''s number of targets, approved chunk_size and next_index, from jobs or, for a declared change''s job (in_rows), change_jobs.';

-- The approved targets of JOB_ID as one list, in order: a declared
-- change's from change_targets (the same canonical jsonb text register
-- hashed into job_approval), an orders job's from its row. For report,
-- undo and the identity rule; a chunk reads only its range.
create or replace function {{ .schema }}.job_targets(job_id text) returns jsonb
language sql stable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select case when exists (select from change_jobs as cj where cj.job_id = job_targets.job_id)
              then (select coalesce(jsonb_agg(t.target order by t.ordinal), '[]'::jsonb)
                      from change_targets as t where t.job_id = job_targets.job_id)
              else (select j.targets from jobs as j where j.job_id = job_targets.job_id) end
$$;
comment on function {{ .schema }}.job_targets(text) is
  'chunks helper: the approved targets of JOB_ID as one jsonb list in order (change_targets for a declared change''s job, else its jobs row); NULL for no job.';

-- The approved targets of JOB_ID as rows: E each target, ORD its place
-- from 1 (jsonb_array_elements ... with ordinality's shape), from
-- whichever table keeps them. Plain SQL, so the planner inlines it into a
-- lateral join of its caller.
create or replace function {{ .schema }}.job_target_rows(job_id text) returns table(e jsonb, ord bigint)
language sql stable parallel safe
as $$
  select t.target, t.ordinal + 1::bigint
    from {{ .schema }}.change_targets as t
   where t.job_id = job_target_rows.job_id
  union all
  select x.e, x.ord
    from {{ .schema }}.jobs as j
   cross join lateral jsonb_array_elements(case when jsonb_typeof(j.targets) = 'array' then j.targets else '[]'::jsonb end)
         with ordinality as x(e, ord)
   where j.job_id = job_target_rows.job_id
$$;
comment on function {{ .schema }}.job_target_rows(text) is
  'chunks helper: the approved targets of JOB_ID as rows (e, ord from 1), from change_targets for a declared change''s job, else its jobs row. Inlined.';
