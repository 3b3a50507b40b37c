-- report's answer for a job of a declared change (job_change): the six
-- lists of report, each of the targets' keys (numbers for integer keys,
-- strings otherwise) in key order, by report's rules for a change
-- (change_report_sql, run as the writer role), after report's checks
-- (change_report_job: CH409 when the job is not its approval or its change
-- was redefined or dropped).
create or replace function {{ .schema }}.report_change(job_id text) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_def jsonb := change_report_job(report_change.job_id);
  v_status jsonb;
begin
  v_status := writer_run(change_report_sql(v_def), change_report_input(array[report_change.job_id]), null);
  return (
    select jsonb_build_object(
             'approved', coalesce(jsonb_agg(t.k order by t.ord), '[]'),
             'committed', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed), '[]'),
             'remaining', coalesce(jsonb_agg(t.k order by t.ord) filter (where not t.committed), '[]'),
             'matching', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed and t.status = 'matching'), '[]'),
             'drifted', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed and t.status = 'drifted'), '[]'),
             'missing', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed and t.status = 'missing'), '[]'))
      from (select x.ord, change_key_of(v_def, x.e) as k, x.ord <= j.next_index as committed, s.e ->> 1 as status
              from jobs as j
             cross join lateral jsonb_array_elements(j.targets) with ordinality as x(e, ord)
              left join jsonb_array_elements(v_status) as s(e) on (s.e ->> 0)::bigint = x.ord
             where j.job_id = report_change.job_id) as t);
end
$$;
comment on function {{ .schema }}.report_change(text) is
  'chunks helper: report''s six lists for a job of a declared change, by key (matching: the row still has every value the change wrote and the version it left; missing: no row has the key; drifted otherwise), its table read as the writer role; CH409 when the job is not its approval or its change was redefined or dropped.';
