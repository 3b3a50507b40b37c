create or replace function {{ .schema }}.report(job_id text) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_report jsonb;
  v_targets jsonb;
  v_next_index integer;
  v_approval_problem text;
begin
  perform check_name(report.job_id, 'job_id');
  -- A job of a declared change (register_change) is reported by its keys.
  if exists (select from job_change as jc where jc.job_id = report.job_id) then
    return report_change(report.job_id);
  end if;
  -- One SELECT reads the job's progress and the current orders together. A
  -- stored job whose targets or next_index cannot be read as a list of
  -- approvals and a prefix of it is not reported on: that is a conflict.
  select case
           when targets_look_normal(j.targets) and j.next_index <= jsonb_array_length(j.targets) then
             (select jsonb_build_object(
                       'approved', coalesce(jsonb_agg(t.id order by t.id), '[]'),
                       'committed', coalesce(jsonb_agg(t.id order by t.id) filter (where t.committed), '[]'),
                       'remaining', coalesce(jsonb_agg(t.id order by t.id) filter (where not t.committed), '[]'),
                       'matching', coalesce(jsonb_agg(t.id order by t.id) filter (where t.committed and t.status = 'matching'), '[]'),
                       'drifted', coalesce(jsonb_agg(t.id order by t.id) filter (where t.committed and t.status = 'drifted'), '[]'),
                       'missing', coalesce(jsonb_agg(t.id order by t.id) filter (where t.committed and t.status = 'missing'), '[]'))
                from (select (x.e -> 'id')::bigint as id, x.ord <= j.next_index as committed,
                             case
                               when o.id is null then 'missing'
                               when order_matches(o.tenant, o.qty, o.state, o.revision, j.tenant, (x.e -> 'revision')::bigint,
                                                  (x.e -> 'qty')::bigint, coalesce(k.kind, 'cancel')) then 'matching'
                               else 'drifted'
                             end as status
                        from jsonb_array_elements(j.targets) with ordinality as x(e, ord)
                        left join orders as o on o.id = (x.e -> 'id')::bigint) as t)
         end,
         j.targets, j.next_index,
         approval_problem(j.job_id, coalesce(k.kind, 'cancel'), j.tenant, j.targets, j.chunk_size,
                          ap.kind, ap.tenant, ap.targets_sha256, ap.chunk_size)
    into v_report, v_targets, v_next_index, v_approval_problem
    from jobs as j
    left join job_kind as k on k.job_id = j.job_id
    left join job_approval as ap on ap.job_id = j.job_id
   where j.job_id = report.job_id;
  if not found then
    raise exception 'job %: not found', report.job_id using errcode = 'CH409';
  end if;
  if v_report is null then
    raise exception 'job %: %', report.job_id,
      case when targets_look_normal(v_targets)
           then format('next_index %s is beyond the %s targets', v_next_index, jsonb_array_length(v_targets))
           else coalesce(job_problem(report.job_id, v_targets, v_next_index), 'the stored job is not sound')
      end using errcode = 'CH409';
  end if;
  -- Nor is a job that is no longer its registered approval: "matching"
  -- would be measured against targets nobody approved.
  if v_approval_problem is not null then
    raise exception '%', v_approval_problem using errcode = 'CH409';
  end if;
  return v_report;
end
$$;
comment on function {{ .schema }}.report(text) is
$c$What a job approved, committed and left, and how its committed orders look now.
Returns {"approved", "committed", "remaining", "matching", "drifted", "missing"}, each an
id-ordered list. A committed order is matching when it still has the job's tenant, the
approved qty, the state the job left it in ('cancelled'; 'pending' for an undo made by
register_undo) and the approved revision + 1; missing when no order has its id; drifted
otherwise. One SELECT; changes nothing. Errors: 22023 bad job_id; CH409
unknown job, a stored job whose targets or next_index cannot be read, or one that is no longer
the approval register recorded (job_approval) or was never registered through chunks.
A job of a declared change (register_change) lists its targets' keys instead, in key order
(report_change: matching when the row still has every value the change wrote).$c$;

-- The signature of a router (the template is tenant_call.sql): the job of one tenant.
{{ template "common/tenant_call.sql" (merge (dict "name" "report" "returns" "jsonb" "volatility" "stable" "missing" "conflict"
  "comment" `the report, read in one SELECT; changes nothing.`) .) }}
