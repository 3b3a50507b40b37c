-- report's answer for a job of a declared change (job_change): the six
-- lists of report, each of the targets' keys (numbers for integer keys,
-- strings otherwise) in key order, by report's rules for a change
-- (change_report_sql), after report's checks (change_report_job: CH409
-- when the job is not its approval or its change was redefined or
-- dropped).
create or replace function {{ .schema }}.report_change(job_id text) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_def jsonb := change_report_job(report_change.job_id);
  v_report jsonb;
begin
  execute format($q$
    select jsonb_build_object(
             'approved', coalesce(jsonb_agg(t.k order by t.ord), '[]'),
             'committed', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed), '[]'),
             'remaining', coalesce(jsonb_agg(t.k order by t.ord) filter (where not t.committed), '[]'),
             'matching', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed and t.status = 'matching'), '[]'),
             'drifted', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed and t.status = 'drifted'), '[]'),
             'missing', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed and t.status = 'missing'), '[]'))
      from (%s) as t$q$, change_report_sql(v_def))
    into v_report
    using array[report_change.job_id],
          array[(select j.targets from jobs as j where j.job_id = report_change.job_id)],
          array[(select j.next_index from jobs as j where j.job_id = report_change.job_id)],
          array[0];
  return v_report;
end
$$;
comment on function {{ .schema }}.report_change(text) is
  'chunks helper: report''s six lists for a job of a declared change, by key (matching: the row still has every value the change wrote and the version it left; missing: no row has the key; drifted otherwise); CH409 when the job is not its approval or its change was redefined or dropped.';
