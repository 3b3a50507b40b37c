-- Routing status_page (what chunks status and the status page show): every
-- shard's page at once (RUN ON ALL), put together on the router. A job is
-- listed under the partition its tenant's calls go to, as in job_status;
-- the page is the first MAX_JOBS of all shards' jobs in (job_id, shard)
-- order after AFTER_JOB_ID. counts, unfinished_orders, oldest_progress_at
-- and changes add up (or take the earliest of) the shards' own.
create or replace function {{ .schema }}.shard_status_page(after_job_id text, max_jobs integer) returns setof jsonb
language plproxy
as $$
  cluster '{{ .cluster }}';
  run on all;
  select jsonb_build_object('shard', current_setting('chunks.shard', true),
                            'page', {{ .shard_schema }}.status_page(after_job_id, max_jobs));
$$;
comment on function {{ .schema }}.shard_status_page(text, integer) is
  'chunks router helper: {"shard", "page": status_page(AFTER_JOB_ID, MAX_JOBS)} from every shard at once (PL/Proxy, RUN ON ALL); call status_page(after_job_id, max_jobs) instead.';

create or replace function {{ .schema }}.status_page(after_job_id text, max_jobs integer) returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
set client_min_messages = warning -- PL/Proxy's routine NOTICE when it reconnects after an error
as $$
declare
  v_count integer := jsonb_array_length(shards());
  v_pages jsonb;
  v_state text;
  v_message text;
  v_detail text;
  v_hint text;
begin
  if status_page.max_jobs < 0 then
    raise exception 'max_jobs: must be 0 or more (NULL: every job), got %', status_page.max_jobs using errcode = '22023';
  end if;
  begin
    select coalesce(jsonb_agg(s.r), '[]'::jsonb) into v_pages
      from shard_status_page(status_page.after_job_id, status_page.max_jobs) as s(r);
  exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform shard_error(unavailable_shards(), v_state, v_message, v_detail, v_hint);
  end;
  return (
    with pages as (select p ->> 'shard' as shard, substr(p ->> 'shard', 2)::integer as n, p -> 'page' as page
                     from jsonb_array_elements(v_pages) as p),
         jobs as (select j.e || jsonb_build_object('shard', pg.shard) as job, j.e ->> 'job_id' as job_id, pg.n
                    from pages as pg
                   cross join lateral jsonb_array_elements(pg.page -> 'jobs') as j(e)
                   where 'p' || (hashtext(j.e ->> 'tenant') & (v_count - 1)) = pg.shard),
         page as (select jb.job, jb.job_id, jb.n from jobs as jb order by jb.job_id, jb.n limit status_page.max_jobs),
         -- Each declared change's jobs by state, added up over the shards
         -- (a change with no job on any shard: one row with a NULL state).
         changes_by_state as (select c.key as change, x.key as state, sum(x.value::bigint) as jobs
                                from pages as pg
                               cross join lateral jsonb_each(pg.page -> 'changes') as c
                                left join lateral jsonb_each_text(c.value) as x on true
                               group by c.key, x.key)
    select jsonb_build_object(
             'now', now(),
             'jobs', coalesce((select jsonb_agg(pa.job order by pa.job_id, pa.n) from page as pa), '[]'::jsonb),
             'more', coalesce((select bool_or((pg.page ->> 'more')::boolean) from pages as pg), false)
                     or (select count(*) from jobs) > (select count(*) from page),
             'workers', coalesce((select jsonb_agg(w.e || jsonb_build_object('shard', pg.shard) order by w.e ->> 'worker_id', pg.n)
                                    from pages as pg cross join lateral jsonb_array_elements(pg.page -> 'workers') as w(e)),
                                 '[]'::jsonb),
             'counts', coalesce((select jsonb_object_agg(c.state, c.jobs)
                                   from (select x.key as state, sum(x.value::bigint) as jobs
                                           from pages as pg cross join lateral jsonb_each_text(pg.page -> 'counts') as x
                                          group by x.key) as c), '{}'::jsonb),
             'unfinished_orders', coalesce((select sum((pg.page ->> 'unfinished_orders')::bigint) from pages as pg), 0),
             'oldest_progress_at', (select min((pg.page ->> 'oldest_progress_at')::timestamptz) from pages as pg),
             'changes', coalesce((select jsonb_object_agg(ch.change, ch.counts)
                                    from (select cs.change,
                                                 coalesce(jsonb_object_agg(cs.state, cs.jobs) filter (where cs.state is not null),
                                                          '{}'::jsonb) as counts
                                            from changes_by_state as cs
                                           group by cs.change) as ch), '{}'::jsonb),
             -- Campaigns and the jobs that wait for a person, each shard's
             -- with its "shard" (a campaign lives on one shard).
             'campaigns_unfinished', coalesce((select sum((pg.page ->> 'campaigns_unfinished')::bigint) from pages as pg), 0),
             'campaigns', coalesce((select jsonb_agg(c.e || jsonb_build_object('shard', pg.shard)
                                                     order by (c.e ->> 'created_at')::timestamptz desc, c.e ->> 'name', pg.n)
                                      from pages as pg cross join lateral jsonb_array_elements(pg.page -> 'campaigns') as c(e)),
                                   '[]'::jsonb),
             'attention_count', coalesce((select sum((pg.page ->> 'attention_count')::bigint) from pages as pg), 0),
             'attention', coalesce((select jsonb_agg(a.e order by (a.e ->> 'paused_at')::timestamptz, a.e ->> 'job_id')
                                      from (select x.e || jsonb_build_object('shard', pg.shard) as e
                                              from pages as pg cross join lateral jsonb_array_elements(pg.page -> 'attention') as x(e)
                                             order by (x.e ->> 'paused_at')::timestamptz, x.e ->> 'job_id'
                                             limit 10) as a), '[]'::jsonb)));
end
$$;
comment on function {{ .schema }}.status_page(text, integer) is
$c$The fleet of every shard at one moment, as status_page shows one server's: {"now", "jobs", "more",
"workers", "counts", "unfinished_orders", "oldest_progress_at", "changes", "campaigns_unfinished",
"campaigns", "attention_count", "attention"}, asking every shard at once (RUN ON
ALL). jobs are the first MAX_JOBS (NULL: all) of every shard's jobs after AFTER_JOB_ID, in (job_id,
shard) order, each with "shard", the shard its tenant's calls go to; workers are every shard's,
each with its "shard"; counts, unfinished_orders and changes (every change declared on a shard,
with its jobs by state) add up the shards' own, oldest_progress_at is
their earliest; campaigns and attention are every shard's, each with its "shard", the ten
paused first of attention, and their counts add up. While two partitions share a database (halfway through a reshard), its jobs are
listed once but counted once for each. Read-only. Errors: 22023 negative max_jobs; 08006 when a
shard cannot be reached (the message names every shard that does not answer).$c$;
