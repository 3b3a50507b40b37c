-- Campaigns: what campaigns are doing, each summed over its jobs in one
-- query that reads only their own jobs (campaign_jobs by campaign): their
-- progress, never their rows. Drift is campaign report's: it reads every
-- committed row (1,000,000 of them take seconds), which a status watched
-- every few seconds must not. campaign_rows answers for many campaigns in
-- one pass (status_page lists the unfinished ones), campaign_status for one.
create or replace function {{ .schema }}.campaign_rows(names text[]) returns setof jsonb
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  -- job_state's rules, in its one definition; a job of a campaign without
  -- a queue row (idle there) is waiting for its turn here.
  with running as materialized (select rc.key from running_chunks() as rc),
  per_job as (
    select cj.campaign, j.tenant, j.next_index, j.targets as n,
           replace(job_state(j.next_index, j.targets, exists (select from running as r where r.key = run_lock_key(j.job_id)),
                             q.job_id is not null, q.paused, e.job_id is not null,
                             pr.job_id is not null and pr.approved_at is null), 'idle', 'waiting') as state,
           -- two people: the job's run proposal (one proposer and one approval for all)
           pr.job_id is not null as proposed, pr.proposed_by, pr.proposed_at, pr.approved_by, pr.approved_at
      from campaign_jobs as cj
      join job_shapes as j on j.job_id = cj.job_id
      left join job_queue as q on q.job_id = cj.job_id
      left join job_ends as e on e.job_id = cj.job_id
      left join proposals as pr on pr.job_id = cj.job_id and pr.action = 'run'
     where cj.campaign = any (campaign_rows.names)
    -- Each job's state once (offset 0): pulled up, the CASE (with its
    -- jsonb_array_length, which decompresses the job's targets) ran once per
    -- count below, five times a job.
    offset 0
  ),
  sums as (
    select p.campaign,
           coalesce(sum(p.next_index), 0)::integer as committed,
           count(*) filter (where p.state = 'done')::integer as done,
           count(*) filter (where p.state = 'running')::integer as running,
           count(*) filter (where p.state = 'paused')::integer as paused,
           count(*) filter (where p.state = 'queued')::integer as queued,
           count(*) filter (where p.state = 'waiting')::integer as waiting,
           count(*) filter (where p.state = 'abandoned')::integer as abandoned,
           count(*) filter (where p.state = 'proposed')::integer as proposed,
           coalesce(sum(p.n - p.next_index) filter (where p.state = 'abandoned'), 0)::integer as abandoned_targets,
           count(*) filter (where p.state in ('running', 'queued')) = 0
             and count(*) filter (where p.state in ('paused', 'waiting', 'proposed')) > 0 as stalled,
           bool_or(p.proposed) as two_person, min(p.proposed_by) as proposed_by, min(p.proposed_at) as proposed_at,
           min(p.approved_by) as approved_by, max(p.approved_at) as approved_at
      from per_job as p
     group by p.campaign
  )
  select jsonb_build_object(
           'name', c.name, 'tenant', c.tenant, 'chunk_size', c.chunk_size, 'digest', c.digest,
           'created_at', c.created_at, 'paused', c.paused, 'queue_window', c.queue_window,
           'targets', c.target_count, 'committed', s.committed, 'remaining', c.target_count - s.committed,
           'jobs', c.job_count, 'jobs_done', s.done, 'jobs_running', s.running, 'jobs_paused', s.paused,
           'jobs_queued', s.queued, 'jobs_waiting', s.waiting, 'jobs_abandoned', s.abandoned,
           'abandoned_targets', s.abandoned_targets, 'jobs_proposed', s.proposed,
           -- The recent rate: committed now against the campaign's progress
           -- about a minute ago (campaign_progress, which the fleet's
           -- heartbeats sample; with less than a minute of samples, the
           -- oldest); NULL without a sample a second old (no fleet ran it).
           'rate_per_s', r.rate,
           'eta_s', case when r.rate > 0 and not s.stalled
                         then round((c.target_count - s.committed - s.abandoned_targets) / r.rate, 1) end,
           -- Nothing can progress: targets remain, and no job is running or
           -- queued (those left are paused, and the waiting ones are
           -- released only as a queued one finishes).
           'stalled', s.stalled)
         -- A campaign over many tenants (campaign_create_change's TENANTS):
         -- its progress by tenant.
         || case when c.tenant is null then jsonb_build_object('tenants', (
              select jsonb_agg(jsonb_build_object('tenant', t.tenant, 'targets', t.n, 'committed', t.committed,
                                                  'jobs', t.jobs, 'jobs_done', t.done) order by t.tenant collate "C")
                from (select p.tenant, sum(p.n)::integer as n, sum(p.next_index)::integer as committed, count(*)::integer as jobs,
                             count(*) filter (where p.state = 'done')::integer as done
                        from per_job as p where p.campaign = c.name group by p.tenant) as t)) else '{}' end
         -- Two people: who proposed it, and who approved it when.
         || case when s.two_person then jsonb_build_object('proposed_by', s.proposed_by, 'proposed_at', s.proposed_at,
                                                           'approved_by', s.approved_by, 'approved_at', s.approved_at)
                 else '{}' end
    from campaigns as c
    join sums as s on s.campaign = c.name
    left join lateral (select round((s.committed - o.committed) / extract(epoch from clock_timestamp() - o.at)::numeric, 1) as rate
                         from (select p.at, p.committed
                                 from campaign_progress as p
                                where p.campaign = c.name
                                order by p.at <= clock_timestamp() - interval '1 minute' desc,
                                         case when p.at <= clock_timestamp() - interval '1 minute' then p.at end desc, p.at
                                limit 1) as o
                        where o.at <= clock_timestamp() - interval '1 second') as r on true
   order by array_position(campaign_rows.names, c.name)
$$;
comment on function {{ .schema }}.campaign_rows(text[]) is
  'chunks helper (campaign_status, status_page): campaign_status''s object for each of the campaigns NAMES that exists, in that order, in one pass over their jobs.';

create or replace function {{ .schema }}.campaign_status(name text) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_status jsonb;
begin
  perform check_name(campaign_status.name, 'name');
  select r into v_status from campaign_rows(array[campaign_status.name]) as r;
  if v_status is null then
    raise exception 'campaign %: not found', campaign_status.name using errcode = 'CH409';
  end if;
  return v_status;
end
$$;
comment on function {{ .schema }}.campaign_status(text) is
$c$What campaign NAME is doing, summed over its jobs: {"name", "tenant", "chunk_size", "digest",
"created_at", "paused", "queue_window", "targets", "committed", "remaining", "jobs", "jobs_done",
"jobs_running", "jobs_paused", "jobs_queued", "jobs_waiting" (not yet released into the queue),
"jobs_abandoned" (abandon_job) and "abandoned_targets" (their remaining targets, never run),
"jobs_proposed" (two people: waiting for their approval, campaign_approve),
"rate_per_s" (committed
targets per second over about the last minute, from the samples the fleet's heartbeats take,
campaign_progress; null without a fleet's sample), "eta_s" (remaining but abandoned targets / rate; null when the
rate is unknown or 0, or stalled), "stalled" (targets remain and no job is running or queued: the
ones left are paused, and nothing moves until a person decides)}; for a campaign over many
tenants (tenant null), "tenants": [{"tenant", "targets", "committed", "jobs", "jobs_done"}] too;
for a two-person campaign, "proposed_by", "proposed_at", "approved_by", "approved_at" (null
while it waits).
Reads only this campaign's jobs, not their rows (drift is campaign_report's); locks nothing. Errors: 22023 bad name; CH409 unknown campaign.$c$;
