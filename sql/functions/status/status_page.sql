-- Fleet mode: everything chunks status and the status page show, in one
-- query however many jobs there are: a page of jobs with their details, and
-- for all jobs only what is cheap (their states, the orders left, the
-- oldest progress), plus the live workers.
create or replace function {{ .schema }}.status_page(after_job_id text, max_jobs integer) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_page jsonb;
  v_last text;
  v_fleet jsonb;
begin
  if status_page.max_jobs < 0 then
    raise exception 'max_jobs: must be 0 or more (NULL: every job), got %', status_page.max_jobs using errcode = '22023';
  end if;
  select coalesce(jsonb_agg(r.job order by r.ord), '[]'::jsonb), max(r.job ->> 'job_id')
    into v_page, v_last
    from job_rows(status_page.after_job_id, status_page.max_jobs) with ordinality as r(job, ord);

  -- Each job's number of targets first, on its own: the targets (the
  -- bulk of a row) then go no further than this scan.
  with running as materialized (select rc.key from running_chunks() as rc),
       j as materialized (select s.job_id, s.next_index, s.targets as n from job_shapes as s
                           where not exists (select from job_archive as ar where ar.job_id = s.job_id)),
       f as (select j.job_id, job_state(j.next_index, j.n, r.key is not null, q.job_id is not null, q.paused, e.job_id is not null,
                              exists (select from proposals as pr where pr.job_id = j.job_id and pr.action = 'run' and pr.approved_at is null)) as state,
                    greatest(j.n - j.next_index, 0) as remaining, q.pause_reason,
                    coalesce(p.at, q.visible_at) as progress_seen
               from j
               left join job_queue as q on q.job_id = j.job_id
               left join running as r on r.key = run_lock_key(j.job_id)
               left join job_progress as p on p.job_id = j.job_id and p.next_index <= j.next_index
               left join job_ends as e on e.job_id = j.job_id)
  select jsonb_build_object(
           'counts', coalesce((select jsonb_object_agg(g.state, g.jobs)
                                 from (select f.state, count(*) as jobs from f group by f.state) as g), '{}'::jsonb),
           'unfinished_orders', coalesce(sum(f.remaining) filter (where f.state not in ('done', 'abandoned')), 0),
           'oldest_progress_at', min(f.progress_seen) filter (where f.state in ('queued', 'running')),
           -- Every declared change, with its jobs by state (none: {}).
           'changes', (select coalesce(jsonb_object_agg(c.name, coalesce(g.counts, '{}'::jsonb)), '{}'::jsonb)
                         from (select distinct c.name from changes as c) as c
                         left join (select s.change, jsonb_object_agg(s.state, s.jobs) as counts
                                      from (select jc.change, f.state, count(*) as jobs
                                              from job_change as jc
                                              join f on f.job_id = jc.job_id
                                             group by jc.change, f.state) as s
                                     group by s.change) as g on g.change = c.name),
           -- The unfinished campaigns (a job neither done nor abandoned), the
           -- ten newest with campaign_status's sums and their progress over
           -- the last 15 minutes (campaign_progress: [epoch, committed]).
           'campaigns_unfinished', (select count(distinct cj.campaign) from campaign_jobs as cj join f on f.job_id = cj.job_id
                                     where f.state not in ('done', 'abandoned')),
           'campaigns', (select coalesce(jsonb_agg(r.c || jsonb_build_object('samples', (
                                   select coalesce(jsonb_agg(jsonb_build_array(round(extract(epoch from p.at)::numeric, 3), p.committed)
                                                             order by p.at), '[]')
                                     from campaign_progress as p
                                    where p.campaign = r.c ->> 'name' and p.at > now() - interval '15 minutes')) order by r.o), '[]')
                           from campaign_rows(array(select c.name from campaigns as c
                                                     where exists (select from campaign_jobs as cj join f on f.job_id = cj.job_id
                                                                    where cj.campaign = c.name and f.state not in ('done', 'abandoned'))
                                                     order by c.created_at desc, c.name
                                                     limit 10)) with ordinality as r(c, o)),
           -- The jobs that wait for a person: paused, but not by their
           -- campaign's pause (the campaign says so); the ten paused first.
           'attention_count', count(*) filter (where f.state = 'paused' and f.pause_reason is distinct from 'campaign paused by an operator'),
           'attention', (select coalesce(jsonb_agg(a.e order by a.paused_at, a.job_id), '[]')
                           from (select jsonb_build_object('job_id', q.job_id, 'tenant', j.tenant,
                                                           'campaign', (select cj.campaign from campaign_jobs as cj where cj.job_id = q.job_id),
                                                           'paused_at', q.paused_at, 'paused_by', q.paused_by,
                                                           'pause_reason', q.pause_reason) as e, q.paused_at, q.job_id
                                   from job_queue as q
                                   join jobs as j on j.job_id = q.job_id
                                  where q.paused and q.pause_reason is distinct from 'campaign paused by an operator'
                                    and not exists (select from job_ends as e where e.job_id = q.job_id)
                                  order by q.paused_at, q.job_id
                                  limit 10) as a))
    into v_fleet
    from f;

  return jsonb_build_object(
           'now', now(),
           'jobs', v_page,
           'more', v_last is not null and exists (select from jobs as j where j.job_id > v_last
                                                    and not exists (select from job_archive as ar where ar.job_id = j.job_id)),
           'workers', worker_status()) || v_fleet;
end
$$;
comment on function {{ .schema }}.status_page(text, integer) is
$c$The fleet at one moment, in one call: {"now", "jobs", "more", "workers", "counts",
"unfinished_orders", "oldest_progress_at", "changes", "campaigns_unfinished", "campaigns",
"attention_count", "attention"}. jobs is job_rows(AFTER_JOB_ID, MAX_JOBS): at most
MAX_JOBS jobs (NULL: all; 0: none) after AFTER_JOB_ID (NULL: from the first), in job_id order;
more says whether jobs follow the last one. workers is worker_status(). Over every job but the
archived ones (archive_jobs): counts
is the number of jobs by state, unfinished_orders the approved orders of unfinished jobs not
committed yet, and oldest_progress_at, of the queued and running jobs, the earliest time one
was last seen moving forward (when it was queued, if never). changes has every declared change's
name, with the number of its jobs by state ({} when it has none). campaigns_unfinished counts
the campaigns with a job neither done nor abandoned, and campaigns has the ten newest of them,
each as campaign_status describes it, with "samples": [[epoch, committed], ...] of the last 15
minutes (campaign_progress). attention_count counts the paused jobs that wait for a person (not
paused by their campaign's pause), and attention has the ten paused first: {"job_id", "tenant",
"campaign", "paused_at", "paused_by", "pause_reason"}. Read-only. Errors: 22023 negative
max_jobs.$c$;
