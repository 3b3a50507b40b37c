-- How many committed targets of each of JOB_IDS report would call
-- matching, and how many drifted or missing, by report's rules for every
-- change (change_status), for job_rows (status, the status page and the
-- metrics) and campaign_undo: one read of a table per change definition
-- the jobs were approved under, not one per job. A job that is no longer
-- its approval, or whose change was redefined or dropped
-- (report_definitions), is left out, and so are the jobs of a table this
-- session may not run code on (CH409): their drift is unknown.
drop function if exists {{ .schema }}.change_job_drift(text);
create or replace function {{ .schema }}.jobs_drift(job_ids text[]) returns table(job_id text, matching bigint, drift bigint)
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_group record;
  v_status jsonb;
begin
  for v_group in
    select d.def, array_agg(d.job_id order by d.job_id) as job_ids
      from (select r.job_id, r.definition as def from report_definitions(jobs_drift.job_ids) as r) as d
     where d.def is not null
     group by d.def
  loop
    begin
      v_status := change_status(v_group.def, v_group.job_ids);
    exception when sqlstate 'CH409' then
      continue;
    end;
    return query
      select g.job_id, j.next_index - count(o.e), count(o.e)
        from unnest(v_group.job_ids) with ordinality as g(job_id, seq)
        join jobs as j on j.job_id = g.job_id
        left join jsonb_array_elements(v_status -> 'off') as o(e) on (o.e ->> 0)::bigint = g.seq
       group by g.job_id, j.next_index;
  end loop;
end
$$;
comment on function {{ .schema }}.jobs_drift(text[]) is
  'chunks helper (job_rows, campaign_undo): for each of JOB_IDS, the number of committed targets that report calls matching, and drifted or missing; a job report would refuse is left out. One read of a table per change definition.';

-- report's checks of many jobs at once, for jobs_drift and
-- campaign_report_lists: for each of JOB_IDS (SEQ its place, from 1), the
-- definition it was approved under (orders_change() for a job of orders)
-- and, when report would refuse it, why (PROBLEM, in report's words; the
-- definition is then NULL): its row is no longer its approval
-- (approval_problem, which also covers unreadable targets), or its change
-- was redefined or dropped. One statement; the audit is read by
-- change_status, target by target.
create or replace function {{ .schema }}.report_definitions(job_ids text[])
returns table(job_id text, seq integer, definition jsonb, problem text)
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select p.job_id, p.seq::integer, case when p.problem is null then p.def end,
         coalesce(p.problem, case when p.def is null
                                  then format('job %s: its change %s was redefined or dropped since it was approved', p.job_id, p.change) end)
    from (select u.job_id, u.seq, jc.change,
                 case when jc.job_id is null then orders_change() else c.definition end as def,
                 case when j.job_id is null then format('job %s: not found', u.job_id)
                      else approval_problem(j.job_id, coalesce(k.kind, case when jc.job_id is null then 'cancel' else 'change' end),
                                            j.tenant, t.targets, s.chunk_size, ap.kind, ap.tenant, ap.targets_sha256, ap.chunk_size)
                 end as problem
            from unnest(report_definitions.job_ids) with ordinality as u(job_id, seq)
            left join jobs as j on j.job_id = u.job_id
            left join job_shapes as s on s.job_id = j.job_id
            -- the approved list, made once per job (approval_problem reads it twice)
            left join lateral (select case when s.in_rows then job_targets(j.job_id) else j.targets end as targets
                                offset 0) as t on true
            left join job_kind as k on k.job_id = j.job_id
            left join job_approval as ap on ap.job_id = j.job_id
            left join job_change as jc on jc.job_id = j.job_id
            left join changes as c on c.name = jc.change and c.digest = jc.digest) as p
$$;
comment on function {{ .schema }}.report_definitions(text[]) is
  'chunks helper (jobs_drift, campaign_report_lists): for each of JOB_IDS, the definition it was approved under (orders_change() for orders) or, where report would refuse it, why (not found, not its approval, its change redefined or dropped). One statement.';
