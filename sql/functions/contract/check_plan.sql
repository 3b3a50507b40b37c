-- Preflight (README "Safety"): what register followed by drain would do
-- with PLAN now, without doing it. The job id and every target's order are
-- read in ONE SELECT (one snapshot), with no row lock and no write.
create or replace function {{ .schema }}.check_plan(plan jsonb) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_plan jsonb := valid_plan(check_plan.plan);  -- 22023 naming the field, as register
  v_result jsonb;
begin
  -- The job id: free, taken by this very approval (register is a no-op;
  -- its committed targets are done and drain never touches them again),
  -- or taken by another one (register's conflict, in its words). Each
  -- target that drain would still change is judged as its chunk would
  -- judge it: the first problem of change_orders, in its words.
  select jsonb_build_object(
           'job_id', v_plan ->> 'job_id',
           'ok', e.problem is null and bool_and(t.problem is null),
           'job', case when e.job_id is null then 'free' when e.problem is null then 'registered' else 'conflict' end,
           'job_problem', coalesce(e.problem, ''),
           'targets', jsonb_agg(jsonb_build_object('id', t.id, 'ok', t.problem is null,
                                                   'problem', coalesce(t.problem, ''), 'committed', t.committed)
                                order by t.id))
    into v_result
    from (select j.job_id, j.next_index,
                 registration_problem(j.job_id, coalesce(k.kind, ap.kind, 'cancel'), k.undoes, j.tenant, j.targets, j.chunk_size, ap.job_id is not null,
                                      v_plan ->> 'tenant', v_plan -> 'targets', (v_plan -> 'chunk_size')::integer) as problem
            from (select 1) as one
            left join jobs as j on j.job_id = v_plan ->> 'job_id'
            left join job_kind as k on k.job_id = j.job_id
            left join job_approval as ap on ap.job_id = j.job_id) as e
   cross join lateral (
          select x.id, c.committed,
                 case when not c.committed then
                   order_problem(x.id, x.revision, x.qty, v_plan ->> 'tenant', state_before('cancel'),
                                 o.id, o.tenant, o.state, o.revision, o.qty)
                 end as problem
            from rows from (jsonb_to_recordset(v_plan -> 'targets') as (id bigint, qty bigint, revision bigint))
                 with ordinality as x(id, qty, revision, ord)
            left join orders as o on o.id = x.id
           cross join lateral (select e.job_id is not null and e.problem is null and x.ord <= e.next_index as committed) as c) as t
   group by e.job_id, e.problem;
  return v_result;
end
$$;
comment on function {{ .schema }}.check_plan(jsonb) is
$c$Preflight: what register(PLAN) followed by a drain would do now, without doing it.
Returns {"job_id", "ok", "job", "job_problem", "targets": [{"id", "ok", "problem",
"committed"}, ...]} with the targets in id order. job is free (register would create the
job), registered (the same approval is already there: register changes nothing) or conflict
(register would refuse: job_problem says why, in register's words). Each target is ok when
its order would be cancelled now, else problem says why in the words of the chunk's
conflict (missing, another tenant, its state, its revision is R, approved A, or its qty);
a target the registered job already committed is ok and committed, since drain never
changes it again. ok is true when every target is ok and job is not conflict.
The job and the orders are read in one SELECT: nothing is locked (no row lock) or written.
Errors: 22023 bad input (names the field, as register).$c$;
