-- report's six lists for a job of any change (DEFINITION: its declared
-- change's, or orders_change() for a job of orders), once report's checks
-- have passed (change_report_job): each of the targets' keys (numbers for
-- integer keys, strings for text, objects for composite keys) in key
-- order, each committed target judged by its audit (change_status). A
-- job with targets an operator set aside (skip_target) has a seventh,
-- "skipped": [{"key", "reason", "by", "at", "found"}], in key order; a
-- skipped target is in none of committed, remaining, matching, drifted or
-- missing (approved is all of them).
drop function if exists {{ .schema }}.report_change(text);
create or replace function {{ .schema }}.report_lists(job_id text, definition jsonb) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_status jsonb := change_status(report_lists.definition, array[report_lists.job_id]);
  v_result jsonb;
  v_judged integer;
  v_skipped integer;
begin
  select jsonb_build_object(
           'approved', coalesce(jsonb_agg(t.k order by t.ord), '[]'),
           'committed', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed), '[]'),
           'remaining', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.ord > t.next_index and t.skip is null), '[]'),
           'matching', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed and t.status = 'matching'), '[]'),
           'drifted', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed and t.status = 'drifted'), '[]'),
           'missing', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.committed and t.status = 'missing'), '[]'))
         || case when count(t.skip) > 0
                 then jsonb_build_object('skipped', jsonb_agg(jsonb_build_object('key', t.k) || t.skip order by t.ord)
                                                      filter (where t.skip is not null))
                 else '{}' end,
         (v_status ->> 'matching')::integer + count(*) filter (where t.committed and t.status <> 'matching'),
         count(*) filter (where t.skip is not null and t.ord <= t.next_index)
    into v_result, v_judged, v_skipped
    from (select x.ord, change_key_of(report_lists.definition, x.e) as k, x.ord <= j.next_index and s.job_id is null as committed,
                 j.next_index, coalesce(o.e ->> 2, 'matching') as status,
                 case when s.job_id is not null
                      then jsonb_build_object('reason', s.reason, 'by', s.skipped_by, 'at', s.skipped_at, 'found', s.found) end as skip
            from jobs as j
           cross join lateral job_target_rows(j.job_id) as x(e, ord)
            left join job_skips as s on s.job_id = j.job_id and s.ordinal = x.ord - 1
            left join jsonb_array_elements(v_status -> 'off') as o(e) on (o.e ->> 1)::bigint = x.ord
           where j.job_id = report_lists.job_id) as t;
  -- Every committed target was judged once, by its audit row, and every
  -- other target before next_index was skipped (report's checks proved
  -- the audit and the skips are exactly targets[0:next_index]).
  if v_judged + v_skipped is distinct from (select j.next_index from jobs as j where j.job_id = report_lists.job_id) then
    raise exception 'job %: the stored job is not sound: its audit is not exactly targets[0:next_index]', report_lists.job_id
      using errcode = 'CH409';
  end if;
  return v_result;
end
$$;
comment on function {{ .schema }}.report_lists(text, jsonb) is
  'chunks helper (report): the six lists of a job of the change DEFINITION (a declared change''s, or orders_change()), each of the targets'' keys in key order, after report''s checks (matching: the row is as the job left it; missing: no row has the key; drifted otherwise), and a seventh, skipped ([{"key", "reason", "by", "at", "found"}]), when an operator set targets aside.';
