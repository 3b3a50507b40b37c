-- Campaigns: report's rules over every committed target of a campaign, for
-- campaign_report and campaign_status. The committed targets are the audit
-- rows (run_chunk keeps them equal to targets[0:next_index]): plain
-- columns, one index range per job. Set-based and cheap per row: the
-- job-level facts (tenant, kind) are read once per job, not per row, and
-- hashed (1,667 rows for 100,000 targets) for the audit rows to probe: a
-- subquery, not a CTE, so the planner knows job_id is unique there (with a
-- CTE it guessed, and hashed the 100,000 audit rows instead); each row's
-- two facts (missing, matching) are computed once, as booleans the callers
-- count and filter without a text comparison per row.
--
-- orders is read only between LO and HI, so orders outside the campaign's
-- range never enter, however big the table. LO and HI are a guess that
-- costs four index probes, not two per job (3,334 probes, a fifth of the
-- time at 100,000 targets): the lowest committed id of the first job (in
-- seq order) with committed targets and the highest of the last one.
-- campaign_create gives seq 0 the lowest ids, so the guess covers every
-- committed id; a row outside it (a campaign made otherwise, a tampered
-- audit) still gets its order, by one index probe of its own: the answer
-- never depends on the guess. The callers SET jit = off: the planner
-- prices those probes for every row, which would JIT-compile the query
-- (hundreds of ms) for probes that do not run.
--
-- A plain SQL function (no SET, invoker), inlined into its callers, which
-- pin search_path.
-- It was campaign_committed(name), with a text status: CREATE OR REPLACE
-- cannot change a result type, and a function dropped and made again on
-- every migrate would change its oid each time, so it has a new name and the
-- old one is dropped (a no-op after the first migrate; no grant named it,
-- and its callers, PL/pgSQL, find functions by name).
drop function if exists {{ .schema }}.campaign_committed(text);
create or replace function {{ .schema }}.campaign_committed_state(name text)
returns table(id integer, missing boolean, matching boolean)
language sql stable
as $$
  with bounds as materialized (
    select (select (select min(a.id) from {{ .schema }}.job_audit as a where a.job_id = cj.job_id)
              from {{ .schema }}.campaign_jobs as cj
             where cj.campaign = campaign_committed_state.name
               and exists (select from {{ .schema }}.job_audit as a where a.job_id = cj.job_id)
             order by cj.seq limit 1) as lo,
           (select (select max(a.id) from {{ .schema }}.job_audit as a where a.job_id = cj.job_id)
              from {{ .schema }}.campaign_jobs as cj
             where cj.campaign = campaign_committed_state.name
               and exists (select from {{ .schema }}.job_audit as a where a.job_id = cj.job_id)
             order by cj.seq desc limit 1) as hi
  )
  select t.id, t.missing, t.matching
    from (select a.id,
                 case
                   when a.id between (select b.lo from bounds as b) and (select b.hi from bounds as b) then o.id is null
                   else not exists (select from {{ .schema }}.orders as x where x.id = a.id)
                 end as missing,
                 coalesce(case
                            when a.id between (select b.lo from bounds as b) and (select b.hi from bounds as b)
                              then {{ .schema }}.order_matches(o.tenant, o.qty, o.state, o.revision, pj.tenant,
                                                               a.previous_revision, a.qty, pj.kind)
                            else (select {{ .schema }}.order_matches(x.tenant, x.qty, x.state, x.revision, pj.tenant,
                                                                     a.previous_revision, a.qty, pj.kind)
                                    from {{ .schema }}.orders as x where x.id = a.id)
                          end, false) as matching
            from (select cj.job_id, j.tenant, coalesce(k.kind, 'cancel') as kind
                    from {{ .schema }}.campaign_jobs as cj
                    join {{ .schema }}.jobs as j on j.job_id = cj.job_id
                    left join {{ .schema }}.job_kind as k on k.job_id = cj.job_id
                   where cj.campaign = campaign_committed_state.name
                  offset 0) as pj
            join {{ .schema }}.job_audit as a on a.job_id = pj.job_id
            left join {{ .schema }}.orders as o
              on o.id = a.id
             and o.id between (select b.lo from bounds as b) and (select b.hi from bounds as b)
          offset 0) as t
$$;
comment on function {{ .schema }}.campaign_committed_state(text) is
  'chunks helper (campaign_report, campaign_status): every committed target of campaign NAME (its audit rows) by report''s rules: MISSING (no such order) and MATCHING (the order still looks the way the job left it); neither is drifted. Reads only this campaign''s jobs, and orders by one range (plus one probe per committed id outside it, if any).';
