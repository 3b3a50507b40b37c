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
       j as materialized (select s.job_id, s.next_index, s.targets as n from job_shapes as s),
       f as (select j.job_id, job_state(j.next_index, j.n, r.key is not null, q.job_id is not null, q.paused, e.job_id is not null) as state,
                    greatest(j.n - j.next_index, 0) as remaining,
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
                         from changes as c
                         left join (select s.change, jsonb_object_agg(s.state, s.jobs) as counts
                                      from (select jc.change, f.state, count(*) as jobs
                                              from job_change as jc
                                              join f on f.job_id = jc.job_id
                                             group by jc.change, f.state) as s
                                     group by s.change) as g on g.change = c.name))
    into v_fleet
    from f;

  return jsonb_build_object(
           'now', now(),
           'jobs', v_page,
           'more', v_last is not null and exists (select from jobs as j where j.job_id > v_last),
           'workers', worker_status()) || v_fleet;
end
$$;
comment on function {{ .schema }}.status_page(text, integer) is
$c$The fleet at one moment, in one call: {"now", "jobs", "more", "workers", "counts",
"unfinished_orders", "oldest_progress_at", "changes"}. jobs is job_rows(AFTER_JOB_ID, MAX_JOBS): at most
MAX_JOBS jobs (NULL: all; 0: none) after AFTER_JOB_ID (NULL: from the first), in job_id order;
more says whether jobs follow the last one. workers is worker_status(). Over every job: counts
is the number of jobs by state, unfinished_orders the approved orders of unfinished jobs not
committed yet, and oldest_progress_at, of the queued and running jobs, the earliest time one
was last seen moving forward (when it was queued, if never). changes has every declared change's
name, with the number of its jobs by state ({} when it has none). Read-only. Errors: 22023 negative
max_jobs.$c$;
