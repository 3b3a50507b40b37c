-- Jobs of declared changes at scale (docs/contract.md "A declared change's
-- chunk"): chunks of up to 1,000 rows and jobs of up to 10,000 targets,
-- kept in tables of their own so that nothing of the contract's `jobs`
-- changes for an orders job (its chunk_size stays 1 to 10).
--
-- A job of a declared change keeps its row in jobs as its registry row:
-- its job_id (every table of chunks refers to it), tenant and next_index
-- (the checkpoint, moved in the commit of each chunk) are the job's. Its
-- targets column holds {"change_targets": N} and its chunk_size 1: the
-- job's targets and approved chunk size are here.
--
-- change_jobs: the approved maximum chunk size and the number of targets.
-- change_targets: the approved targets, one row each, by ordinal (sorted by
-- key at register); a chunk reads its range by primary key, so its cost
-- does not grow with the job. Written once, at register; only the owner
-- writes them.
create table if not exists {{ .schema }}.change_jobs(
  job_id text primary key references {{ .schema }}.jobs(job_id) on delete cascade,
  chunk_size integer not null check (chunk_size between 1 and 1000),
  targets integer not null check (targets between 1 and 10000)
);

create table if not exists {{ .schema }}.change_targets(
  job_id text not null references {{ .schema }}.change_jobs(job_id) on delete cascade,
  ordinal integer not null check (ordinal >= 0),
  target jsonb not null,
  primary key (job_id, ordinal)
);

-- change_chunks: each chunk of a declared change's job as it committed:
-- its first ordinal and its size (a worker may run chunks smaller than the
-- approved maximum), written in the chunk's own statement.
create table if not exists {{ .schema }}.change_chunks(
  job_id text not null references {{ .schema }}.change_jobs(job_id) on delete cascade,
  first_ordinal integer not null check (first_ordinal >= 0),
  size integer not null check (size between 1 and 1000),
  at timestamptz not null default now(),
  primary key (job_id, first_ordinal)
);

-- change_audit's foreign key to jobs goes: it ran one query per audit row
-- (3 to 4 ms of a 1,000-row chunk's 25 ms, measured), and a chunk writes
-- audit rows only for the job whose row it holds locked. verify proves the
-- audit of each job (docs/limits-and-decisions.md).
do $$
declare
  v_name text;
begin
  for v_name in
    select c.conname from pg_constraint as c
     where c.conrelid = '{{ .schema }}.change_audit'::regclass and c.contype = 'f'
       and c.confrelid = '{{ .schema }}.jobs'::regclass
  loop
    execute format('alter table %I.change_audit drop constraint %I', '{{ .schema }}', v_name);
  end loop;
end
$$;

-- A campaign of a declared change runs chunks of up to 1,000 rows too
-- (campaign_create keeps an orders campaign's to 1 to 10).
alter table {{ .schema }}.campaigns drop constraint if exists campaigns_chunk_size_check;
alter table {{ .schema }}.campaigns add constraint campaigns_chunk_size_check check (chunk_size between 1 and 1000);

-- Jobs of declared changes registered before this version move here, with
-- their approval as it was (its sha256 is of the same list: jsonb_agg of
-- the rows in ordinal order prints the same canonical text).
do $$
declare
  v_count bigint;
begin
  insert into {{ .schema }}.change_jobs (job_id, chunk_size, targets)
  select j.job_id, j.chunk_size, jsonb_array_length(j.targets)
    from {{ .schema }}.jobs as j
    join {{ .schema }}.job_change as jc on jc.job_id = j.job_id
   where jsonb_typeof(j.targets) = 'array'
     and not exists (select from {{ .schema }}.change_jobs as cj where cj.job_id = j.job_id);
  get diagnostics v_count = row_count;
  insert into {{ .schema }}.change_targets (job_id, ordinal, target)
  select j.job_id, (x.ord - 1)::integer, x.e
    from {{ .schema }}.jobs as j
    join {{ .schema }}.change_jobs as cj on cj.job_id = j.job_id
   cross join lateral jsonb_array_elements(j.targets) with ordinality as x(e, ord)
   where jsonb_typeof(j.targets) = 'array';
  -- Their chunks so far, as they ran: whole chunks of the approved size.
  insert into {{ .schema }}.change_chunks (job_id, first_ordinal, size, at)
  select cj.job_id, g, least(cj.chunk_size, j.next_index - g), now()
    from {{ .schema }}.change_jobs as cj
    join {{ .schema }}.jobs as j on j.job_id = cj.job_id
   cross join lateral generate_series(0, j.next_index - 1, cj.chunk_size) as g
   where jsonb_typeof(j.targets) = 'array';
  update {{ .schema }}.jobs as j
     set targets = jsonb_build_object('change_targets', cj.targets), chunk_size = 1
    from {{ .schema }}.change_jobs as cj
   where cj.job_id = j.job_id and jsonb_typeof(j.targets) = 'array';
  if v_count > 0 then
    raise notice 'chunks: moved the targets of % jobs of declared changes into change_targets (their approvals are unchanged)', v_count;
  end if;
end
$$;
