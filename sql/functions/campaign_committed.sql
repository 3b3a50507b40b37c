-- Campaigns: report's rules over every committed target of a campaign, for
-- campaign_report and campaign_status. The committed targets are the audit
-- rows (run_chunk keeps them equal to targets[0:next_index]): plain
-- columns, one index range per job. Set-based and cheap per row: the
-- job-level facts (tenant, kind) are read once per job, not per row, and
-- hashed (1,667 rows for 100,000 targets) for the audit rows to probe: a
-- subquery, not a CTE, so the planner knows job_id is unique there (with a
-- CTE it guessed, and hashed the 100,000 audit rows instead); each
-- row's status is computed once; and orders is read only between the
-- lowest and the highest committed id (two index probes per job find
-- them), so orders outside the campaign's range never enter, however big
-- the table. A plain SQL function (no SET, invoker), inlined into its
-- callers, which pin search_path.
create or replace function {{ .schema }}.campaign_committed(name text)
returns table(id integer, status text)
language sql stable
as $$
  with bounds as materialized (
    select min((select min(a.id) from {{ .schema }}.job_audit as a where a.job_id = cj.job_id)) as lo,
           max((select max(a.id) from {{ .schema }}.job_audit as a where a.job_id = cj.job_id)) as hi
      from {{ .schema }}.campaign_jobs as cj
     where cj.campaign = campaign_committed.name
  )
  select t.id, t.status
    from (select a.id,
                 case
                   when o.id is null then 'missing'
                   when {{ .schema }}.order_matches(o.tenant, o.qty, o.state, o.revision, pj.tenant, a.previous_revision,
                                                    a.qty, pj.kind) then 'matching'
                   else 'drifted'
                 end as status
            from (select cj.job_id, j.tenant, coalesce(k.kind, 'cancel') as kind
                    from {{ .schema }}.campaign_jobs as cj
                    join {{ .schema }}.jobs as j on j.job_id = cj.job_id
                    left join {{ .schema }}.job_kind as k on k.job_id = cj.job_id
                   where cj.campaign = campaign_committed.name
                  offset 0) as pj
            join {{ .schema }}.job_audit as a on a.job_id = pj.job_id
            left join {{ .schema }}.orders as o
              on o.id = a.id
             and o.id between (select b.lo from bounds as b) and (select b.hi from bounds as b)
          offset 0) as t
$$;
comment on function {{ .schema }}.campaign_committed(text) is
  'chunks helper (campaign_report, campaign_status): every committed target of campaign NAME (its audit rows) with report''s status: matching, drifted or missing. Reads only this campaign''s jobs and the orders between its lowest and highest committed id.';
