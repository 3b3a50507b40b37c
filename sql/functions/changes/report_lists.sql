-- report's six lists for a job of any change (DEFINITION: its declared
-- change's, or orders_change() for a job of orders), once report's checks
-- have passed (change_report_job): each of the targets' keys (numbers for
-- integer keys, strings for text, objects for composite keys) in key
-- order, each committed target judged by its audit (change_status).
drop function if exists {{ .schema }}.report_change(text);
create or replace function {{ .schema }}.report_lists(job_id text, definition jsonb) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_status jsonb := change_status(report_lists.definition, array[report_lists.job_id]);
  v_result jsonb;
  v_judged integer;
begin
  select jsonb_build_object(
           'approved', coalesce(jsonb_agg(t.k order by t.ord), '[]'),
           'committed', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed), '[]'),
           'remaining', coalesce(jsonb_agg(t.k order by t.ord) filter (where not t.committed), '[]'),
           'matching', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed and t.status = 'matching'), '[]'),
           'drifted', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed and t.status = 'drifted'), '[]'),
           'missing', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed and t.status = 'missing'), '[]')),
         (v_status ->> 'matching')::integer + count(*) filter (where t.committed and t.status <> 'matching')
    into v_result, v_judged
    from (select x.ord, change_key_of(report_lists.definition, x.e) as k, x.ord <= j.next_index as committed,
                 coalesce(o.e ->> 2, 'matching') as status
            from jobs as j
           cross join lateral job_target_rows(j.job_id) as x(e, ord)
            left join jsonb_array_elements(v_status -> 'off') as o(e) on (o.e ->> 1)::bigint = x.ord
           where j.job_id = report_lists.job_id) as t;
  -- Every committed target was judged once, by its audit row (report's
  -- checks proved the audit is exactly targets[0:next_index]).
  if v_judged is distinct from (select j.next_index from jobs as j where j.job_id = report_lists.job_id) then
    raise exception 'job %: the stored job is not sound: its audit is not exactly targets[0:next_index]', report_lists.job_id
      using errcode = 'CH409';
  end if;
  return v_result;
end
$$;
comment on function {{ .schema }}.report_lists(text, jsonb) is
  'chunks helper (report): the six lists of a job of the change DEFINITION (a declared change''s, or orders_change()), each of the targets'' keys in key order, after report''s checks (matching: the row is as the job left it; missing: no row has the key; drifted otherwise).';
