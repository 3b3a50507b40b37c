-- Campaigns: campaign_report for a campaign of a declared change: report's
-- rules for a change's job (report_change) over every job of it, summed;
-- drifted and missing are the keys (numbers for integer keys, strings
-- otherwise) in key order. report_change is no hot path: one EXECUTE per job.
create or replace function {{ .schema }}.campaign_change_report(name text) returns jsonb
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  with per_job as materialized (
    select cj.seq, j.next_index, report_change(cj.job_id) as r
      from campaign_jobs as cj
      join jobs as j on j.job_id = cj.job_id
     where cj.campaign = campaign_change_report.name
  ),
  keys as (
    select p.seq, l.list, x.k, x.ord
      from per_job as p
     cross join lateral (values ('matching'), ('drifted'), ('missing')) as l(list)
     cross join lateral jsonb_array_elements(p.r -> l.list) with ordinality as x(k, ord)
  )
  select jsonb_build_object(
           'name', c.name, 'targets', c.target_count, 'committed', s.committed, 'remaining', c.target_count - s.committed,
           'matching', (select count(*) from keys where keys.list = 'matching')::integer,
           'drifted_count', (select count(*) from keys where keys.list = 'drifted')::integer,
           'missing_count', (select count(*) from keys where keys.list = 'missing')::integer,
           'drifted', coalesce((select jsonb_agg(keys.k order by keys.seq, keys.ord) from keys where keys.list = 'drifted'), '[]'),
           'missing', coalesce((select jsonb_agg(keys.k order by keys.seq, keys.ord) from keys where keys.list = 'missing'), '[]'))
    from campaigns as c
   cross join (select coalesce(sum(p.next_index), 0)::integer as committed from per_job as p) as s
   where c.name = campaign_change_report.name
$$;
comment on function {{ .schema }}.campaign_change_report(text) is
  'chunks helper (campaign_report, campaign_status): report_change summed over every job of campaign NAME, a campaign of a declared change, in campaign_report''s shape with the keys of the drifted and missing rows in key order.';
