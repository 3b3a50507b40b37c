-- Campaigns: how many targets a job of a campaign at CHUNK_SIZE holds: a
-- whole number of chunks, at most limits()' targets_max (64; 60 at chunk
-- size 10). Inlined and folded.
create or replace function {{ .schema }}.campaign_job_size(chunk_size integer) returns integer
language sql immutable parallel safe
as $$
  select ({{ .schema }}.limit_of('targets_max') - {{ .schema }}.limit_of('targets_max') % chunk_size)::integer
$$;
comment on function {{ .schema }}.campaign_job_size(integer) is
  'chunks helper: the targets of each job of a campaign at CHUNK_SIZE: a whole number of chunks, at most limits()'' targets_max. Inlined.';

-- Campaigns: the jobs of campaign NAME, already recorded in campaigns
-- (campaign_create, campaign_create_change), written set-based: TARGETS,
-- sorted, go into jobs NAME-000001, ... of a whole number of chunks, at
-- most 64 targets, each with its approval (job_approval of KIND, recorded
-- from campaign_create) and its membership (campaign_jobs); the first
-- QUEUE_WINDOW jobs are queued and queue_channel() is notified once.
-- Returns the number of jobs. Input already validated.
create or replace function {{ .schema }}.campaign_record_jobs(name text, tenant text, chunk_size integer, targets jsonb,
                                                              kind text, queue_window integer) returns integer
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_per_job integer := campaign_job_size(campaign_record_jobs.chunk_size);
  v_jobs integer := (jsonb_array_length(campaign_record_jobs.targets) + v_per_job - 1) / v_per_job;
begin
  insert into jobs (job_id, tenant, targets, chunk_size, next_index)
  select campaign_job_id(campaign_record_jobs.name, g.seq), campaign_record_jobs.tenant, g.targets, campaign_record_jobs.chunk_size, 0
    from (select ((x.ord - 1) / v_per_job)::integer as seq, jsonb_agg(x.o order by x.ord) as targets
            from jsonb_array_elements(campaign_record_jobs.targets) with ordinality as x(o, ord)
           group by (x.ord - 1) / v_per_job) as g;
  insert into job_approval (job_id, kind, tenant, chunk_size, targets_sha256, recorded_from)
  select j.job_id, campaign_record_jobs.kind, j.tenant, j.chunk_size, targets_sha256(j.targets), 'campaign_create'
    from jobs as j
   where j.job_id in (select campaign_job_id(campaign_record_jobs.name, s.seq) from generate_series(0, v_jobs - 1) as s(seq));
  insert into campaign_jobs (job_id, campaign, seq)
  select campaign_job_id(campaign_record_jobs.name, s.seq), campaign_record_jobs.name, s.seq
    from generate_series(0, v_jobs - 1) as s(seq);
  -- Fairness: only the first queue_window jobs are queued; each one that
  -- finishes releases the next (campaign_job_done, from run_next_chunk).
  insert into job_queue (job_id, visible_at)
  select campaign_job_id(campaign_record_jobs.name, s.seq), clock_timestamp()
    from generate_series(0, least(campaign_record_jobs.queue_window, v_jobs) - 1) as s(seq);
  perform pg_notify(queue_channel(), campaign_record_jobs.name);
  return v_jobs;
end
$$;
comment on function {{ .schema }}.campaign_record_jobs(text, text, integer, jsonb, text, integer) is
  'chunks helper (campaign_create, campaign_create_change): writes the jobs of campaign NAME from TARGETS, sorted (jobs of whole chunks, at most 64 targets; their job_approval of KIND, campaign_jobs, the first QUEUE_WINDOW queued, one notify); returns the number of jobs.';
