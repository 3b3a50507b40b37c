-- Preflight of a declared change (README "Your own tables"): what
-- register_change(CHANGE, PLAN) followed by a drain would do now, without
-- doing it, in check_plan's shape with the targets' keys. Each target is
-- judged by the words of its chunk's conflict (change_sql_parts, the same
-- CASE the generated function raises), in one statement over the user's
-- table with no row lock (EXECUTEd: a check is no hot path).
create or replace function {{ .schema }}.check_change(change text, plan jsonb) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_change record;
  v_plan jsonb;
  v_job_id text;
  v_next_index integer;
  v_problem text;
  v_parts record;
  v_key text;
  v_targets jsonb;
begin
  select p.name, p.definition, p.digest, p.approval into v_change  -- 22023 naming the field
    from valid_change_plan(check_change.change, check_change.plan) as p;
  v_plan := v_change.approval;
  v_job_id := v_plan ->> 'job_id';
  select j.next_index into v_next_index from jobs as j where j.job_id = v_job_id;
  v_problem := change_job_problem(v_job_id, v_change.name, v_change.digest, v_plan ->> 'tenant', v_plan -> 'targets',
                                  (v_plan -> 'chunk_size')::integer);
  v_key := v_change.definition ->> 'key';
  select * into v_parts from change_sql_parts(v_change.definition, '$1', '$2');
  execute format($q$
    with %1$s,
    current as (select %2$s from %3$s as r where r.%4$I in (select t.%4$I from t))
    select coalesce(jsonb_agg(jsonb_build_object('key', to_jsonb(t.%4$I), 'problem', %5$s) order by t."?ordinal"), '[]')
      from t left join current as l on l.%4$I = t.%4$I$q$,
    v_parts.targets_cte, v_parts.compared, (v_change.definition ->> 'table')::regclass, v_key, v_parts.problem)
    into v_targets using v_plan -> 'targets', v_plan ->> 'tenant';
  return (select jsonb_build_object(
                   'job_id', v_job_id,
                   'ok', v_problem is null and bool_and(c.committed or x.e ->> 'problem' is null),
                   'job', case when v_next_index is null then 'free' when v_problem is null then 'registered' else 'conflict' end,
                   'job_problem', coalesce(v_problem, ''),
                   'targets', jsonb_agg(jsonb_build_object('key', x.e -> 'key', 'ok', c.committed or x.e ->> 'problem' is null,
                                                           'problem', case when c.committed then '' else coalesce(x.e ->> 'problem', '') end,
                                                           'committed', c.committed)
                                        order by x.ord))
            from jsonb_array_elements(v_targets) with ordinality as x(e, ord)
           cross join lateral (select v_next_index is not null and v_problem is null and x.ord <= v_next_index as committed) as c);
end
$$;
comment on function {{ .schema }}.check_change(text, jsonb) is
$c$Preflight of a declared change: what register_change(CHANGE, PLAN) followed by a drain would
do now, without doing it. Returns {"job_id", "ok", "job", "job_problem", "targets": [{"key",
"ok", "problem", "committed"}, ...]} with the targets in key order, as check_plan does: job is
free, registered (the same approval is there) or conflict (job_problem in register_change's
words); each target is ok when its row would take the change now, else problem says why in
the words of its chunk's conflict (missing, another tenant, a when column, the version, an
expect column). Nothing is locked or written.
Errors: 22023 bad input (names the field, as register_change).$c$;
