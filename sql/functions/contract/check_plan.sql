-- Preflight (README "Safety"): what register followed by drain would do
-- with PLAN now, without doing it. The job and every target's order are
-- read in one snapshot (a STABLE function), with no row lock and no write.
create or replace function {{ .schema }}.check_plan(plan jsonb) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_plan jsonb := valid_plan(check_plan.plan);  -- 22023 naming the field, as register
  v_job record;
begin
  -- The job id: free, taken by this very approval (register is a no-op;
  -- its committed targets are done and drain never touches them again),
  -- or taken by another one (register's conflict, in its words).
  select j.job_id is not null as registered, j.next_index,
         job_identity_problem(v_plan ->> 'job_id', null, null, v_plan ->> 'tenant', v_plan -> 'targets',
                              (v_plan -> 'chunk_size')::integer) as problem
    into v_job
    from (select 1) as one
    left join jobs as j on j.job_id = v_plan ->> 'job_id';
  -- Each target that drain would still change is judged as its chunk would
  -- judge it, by the generated check of the contract's cancellation
  -- (orders_preview: order_problem's words), as check_change judges a
  -- declared change's; the answer is check_answer's, for both.
  return check_answer(v_plan ->> 'job_id', v_job.registered, v_job.next_index, v_job.problem,
                      change_judge(orders_change(), false, v_plan ->> 'tenant', v_plan -> 'targets'), 'id');
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
The job and the orders are read in one snapshot: nothing is locked (no row lock) or written.
Errors: 22023 bad input (names the field, as register).$c$;

-- The answer of check_plan and check_change, in one place: JOB_ID, whether
-- it is REGISTERED (a job row exists; its committed targets are
-- targets[0:NEXT_INDEX] when JOB_PROBLEM is NULL, the same approval), and
-- JUDGED, [{"key", "problem"}, ...] in the targets' order (the change's
-- generated check: problem NULL when the row would take the change now),
-- each listed under KEY_FIELD ("id" for check_plan, "key" for
-- check_change). A committed target is ok (drain never changes it again).
create or replace function {{ .schema }}.check_answer(job_id text, registered boolean, next_index integer, job_problem text,
                                                      judged jsonb, key_field text) returns jsonb
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select jsonb_build_object(
           'job_id', check_answer.job_id,
           'ok', check_answer.job_problem is null and bool_and(c.committed or x.e ->> 'problem' is null),
           'job', case when not check_answer.registered then 'free' when check_answer.job_problem is null then 'registered' else 'conflict' end,
           'job_problem', coalesce(check_answer.job_problem, ''),
           'targets', jsonb_agg(jsonb_build_object(check_answer.key_field, x.e -> 'key', 'ok', c.committed or x.e ->> 'problem' is null,
                                                   'problem', case when c.committed then '' else coalesce(x.e ->> 'problem', '') end,
                                                   'committed', c.committed)
                                order by x.ord))
    from jsonb_array_elements(check_answer.judged) with ordinality as x(e, ord)
   cross join lateral (select check_answer.registered and check_answer.job_problem is null
                              and x.ord <= check_answer.next_index as committed) as c
$$;
comment on function {{ .schema }}.check_answer(text, boolean, integer, text, jsonb, text) is
  'chunks helper (check_plan, check_change): the preflight''s answer {"job_id", "ok", "job", "job_problem", "targets": [{KEY_FIELD, "ok", "problem", "committed"}]} from the job''s state and the targets JUDGED ([{"key", "problem"}]) by the change''s generated check.';
