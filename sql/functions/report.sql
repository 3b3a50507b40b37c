create or replace function {{ .schema }}.report(job_id text) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_report jsonb;
begin
  perform check_name(report.job_id, 'job_id');
  -- One SELECT reads the job's progress and the current orders together.
  select r.report into v_report
    from jobs as j
   cross join lateral (
     select jsonb_build_object(
              'approved', coalesce(jsonb_agg(t.id order by t.id), '[]'),
              'committed', coalesce(jsonb_agg(t.id order by t.id) filter (where t.committed), '[]'),
              'remaining', coalesce(jsonb_agg(t.id order by t.id) filter (where not t.committed), '[]'),
              'matching', coalesce(jsonb_agg(t.id order by t.id) filter (where t.committed and t.status = 'matching'), '[]'),
              'drifted', coalesce(jsonb_agg(t.id order by t.id) filter (where t.committed and t.status = 'drifted'), '[]'),
              'missing', coalesce(jsonb_agg(t.id order by t.id) filter (where t.committed and t.status = 'missing'), '[]')
            ) as report
       from (select (x.e -> 'id')::integer as id, x.ord <= j.next_index as committed,
                    case
                      when o.id is null then 'missing'
                      when o.tenant = j.tenant and o.qty = (x.e -> 'qty')::integer and o.state = 'cancelled'
                           and o.revision = (x.e -> 'revision')::integer + 1 then 'matching'
                      else 'drifted'
                    end as status
               from jsonb_array_elements(j.targets) with ordinality as x(e, ord)
               left join orders as o on o.id = (x.e -> 'id')::integer) as t
   ) as r
   where j.job_id = report.job_id;
  if not found then
    raise exception 'job %: not found', report.job_id using errcode = 'CH409';
  end if;
  return v_report;
end
$$;
comment on function {{ .schema }}.report(text) is
$c$What a job approved, committed and left, and how its committed orders look now.
Returns {"approved", "committed", "remaining", "matching", "drifted", "missing"}, each an
id-ordered list. A committed order is matching when it still has the job's tenant, the
approved qty, state 'cancelled' and the approved revision + 1; missing when no order has
its id; drifted otherwise. One SELECT; changes nothing. Errors: 22023 bad job_id; CH409
unknown job.$c$;
