-- Campaigns: how many targets a job of a campaign at CHUNK_SIZE holds: a
-- whole number of chunks, at most limits()' targets_max for orders (64; 60
-- at chunk size 10); for a declared CHANGE, at most 100 chunks and
-- change_targets_max (10,000 at chunk size 100 and more): a job is the
-- unit a worker claims and the queue window counts, so a campaign of
-- 1,000,000 targets at chunk size 1,000 is 100 jobs. Inlined and folded.
drop function if exists {{ .schema }}.campaign_job_size(integer);
create or replace function {{ .schema }}.campaign_job_size(chunk_size integer, change boolean) returns integer
language sql immutable parallel safe
as $$
  select case when change
              then least(chunk_size * 100, {{ .schema }}.limit_of('change_targets_max') - {{ .schema }}.limit_of('change_targets_max') % chunk_size)
              else {{ .schema }}.limit_of('targets_max') - {{ .schema }}.limit_of('targets_max') % chunk_size end::integer
$$;
comment on function {{ .schema }}.campaign_job_size(integer, boolean) is
  'chunks helper: the targets of each job of a campaign at CHUNK_SIZE: a whole number of chunks, at most limits()'' targets_max; of a declared CHANGE, at most 100 chunks and change_targets_max. Inlined.';

-- Campaigns: how many jobs N sorted targets make, JOB_SIZE a job: with
-- TENANTS (each target's, sorted by tenant), no job holds two tenants.
create or replace function {{ .schema }}.campaign_job_count(n integer, job_size integer, tenants text[]) returns integer
language sql immutable
set search_path = {{ .schema }}, pg_temp
as $$
  select case when campaign_job_count.tenants is null then (campaign_job_count.n + campaign_job_count.job_size - 1) / campaign_job_count.job_size
              else (select sum((g.c + campaign_job_count.job_size - 1) / campaign_job_count.job_size)::integer
                      from (select count(*) as c from unnest(campaign_job_count.tenants) as t group by t) as g) end
$$;
comment on function {{ .schema }}.campaign_job_count(integer, integer, text[]) is
  'chunks helper: the jobs of a campaign of N sorted targets, JOB_SIZE each; with TENANTS (each target''s), no job holds two tenants.';

-- Campaigns: the jobs of campaign NAME, already recorded in campaigns
-- (campaign_create, campaign_create_change), written set-based: TARGETS,
-- sorted, go into jobs NAME-000001, ... of campaign_job_size targets, each
-- with its approval (job_approval of KIND, recorded from campaign_create)
-- and its membership (campaign_jobs); the first QUEUE_WINDOW jobs are
-- queued and queue_channel() is notified once. Returns the number of jobs.
-- With TENANTS (a declared change's campaign over many tenants: each
-- target's, the targets sorted by tenant then key), a job never holds two
-- tenants and each is of its targets' tenant; else every job is TENANT's.
-- Input already validated. A campaign of a declared change may hold
-- 1,000,000 targets: they are read once in order (never sliced, never
-- built into one jsonb list), and each job's approval hashes the text its
-- list prints (elements joined by ", " in brackets, as jsonb prints an array).
drop function if exists {{ .schema }}.campaign_record_jobs(text, text, integer, jsonb, text, integer);
drop function if exists {{ .schema }}.campaign_record_jobs(text, text, integer, jsonb[], text, integer);
create or replace function {{ .schema }}.campaign_record_jobs(name text, tenant text, chunk_size integer, targets jsonb[],
                                                              kind text, queue_window integer, tenants text[] default null)
returns integer
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_change constant boolean := campaign_record_jobs.kind = 'change';
  v_many constant boolean := campaign_record_jobs.tenants is not null;
  v_n constant integer := cardinality(campaign_record_jobs.targets);
  v_per_job integer := campaign_job_size(campaign_record_jobs.chunk_size, v_change);
  v_jobs integer := campaign_job_count(v_n, v_per_job, campaign_record_jobs.tenants);
  v_ids text[] := array(select campaign_job_id(campaign_record_jobs.name, s.seq) from generate_series(0, v_jobs - 1) as s(seq) order by s.seq);
  v_seq integer[];     -- (many tenants) each target's job, from 0
  v_within integer[];  -- (many tenants) each target's place in its job, from 0
  v_ns integer[];
  v_hashes text[];
  v_lists jsonb[];
  v_tenants text[];
begin
  -- Many tenants: each tenant's targets (contiguous, in order) go into
  -- jobs of their own, in order.
  if v_many then
    select array_agg(y.seq order by y.ord), array_agg(y.p % v_per_job order by y.ord) into v_seq, v_within
      from (select x.ord, x.p, (dense_rank() over (order by x.t collate "C", x.p / v_per_job) - 1)::integer as seq
              from (select t.ord, t.t, (row_number() over (partition by t.t order by t.ord) - 1)::integer as p
                      from unnest(campaign_record_jobs.tenants) with ordinality as t(t, ord)) as x) as y;
  end if;
  -- Job seq (from 0) holds the targets [seq * per_job + 1, (seq + 1) * per_job]
  -- (many tenants: v_seq): its number of targets, the sha256 of its list's
  -- text, (orders) the list, and its tenant.
  select array_agg(g.n order by g.seq), array_agg(g.sha256 order by g.seq), array_agg(g.targets order by g.seq),
         array_agg(g.tenant order by g.seq)
    into v_ns, v_hashes, v_lists, v_tenants
    from (select case when v_many then v_seq[x.ord] else (x.ord - 1) / v_per_job end as seq, count(*)::integer as n,
                 targets_text_sha256('[' || string_agg(x.e::text, ', ' order by x.ord) || ']') as sha256,
                 case when not v_change then jsonb_agg(x.e order by x.ord) end as targets,
                 coalesce(min(campaign_record_jobs.tenants[x.ord]), campaign_record_jobs.tenant) as tenant
            from unnest(campaign_record_jobs.targets) with ordinality as x(e, ord)
           group by 1) as g;
  -- Each job's approval is of its own targets' list (job_approval), as
  -- record_job records one; a declared change's job keeps its targets as
  -- rows (change_jobs, change_targets) behind its registry row in jobs.
  insert into jobs (job_id, tenant, targets, chunk_size, next_index)
  select g.job_id, g.tenant,
         case when v_change then jsonb_build_object('change_targets', g.n) else g.targets end,
         case when v_change then 1 else campaign_record_jobs.chunk_size end, 0
    from unnest(v_ids, v_ns, v_lists, v_tenants) as g(job_id, n, targets, tenant);
  if v_change then
    insert into change_jobs (job_id, chunk_size, targets)
    select g.job_id, campaign_record_jobs.chunk_size, g.n from unnest(v_ids, v_ns) as g(job_id, n);
    insert into change_targets (job_id, ordinal, target)
    select case when v_many then v_ids[v_seq[x.ord] + 1] else v_ids[(x.ord - 1) / v_per_job + 1] end,
           case when v_many then v_within[x.ord] else ((x.ord - 1) % v_per_job)::integer end, x.e
      from unnest(campaign_record_jobs.targets) with ordinality as x(e, ord);
  end if;
  insert into job_approval (job_id, kind, tenant, chunk_size, targets_sha256, recorded_from)
  select g.job_id, campaign_record_jobs.kind, g.tenant, campaign_record_jobs.chunk_size, g.sha256, 'campaign_create'
    from unnest(v_ids, v_hashes, v_tenants) as g(job_id, sha256, tenant);
  insert into campaign_jobs (job_id, campaign, seq)
  select v_ids[s.seq + 1], campaign_record_jobs.name, s.seq
    from generate_series(0, v_jobs - 1) as s(seq);
  -- Fairness: only the first queue_window jobs are queued; each one that
  -- finishes releases the next (campaign_job_done, from run_next_chunk).
  insert into job_queue (job_id, visible_at)
  select v_ids[s.seq + 1], clock_timestamp()
    from generate_series(0, least(campaign_record_jobs.queue_window, v_jobs) - 1) as s(seq);
  perform pg_notify(queue_channel(), campaign_record_jobs.name);
  return v_jobs;
end
$$;
comment on function {{ .schema }}.campaign_record_jobs(text, text, integer, jsonb[], text, integer, text[]) is
  'chunks helper (campaign_create, campaign_create_change): writes the jobs of campaign NAME from TARGETS, sorted (jobs of campaign_job_size targets; with TENANTS, each target''s, no job holds two tenants; a declared change''s in change_jobs and change_targets; their job_approval of KIND, campaign_jobs, the first QUEUE_WINDOW queued, one notify); returns the number of jobs.';
