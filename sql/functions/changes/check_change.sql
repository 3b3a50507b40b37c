-- Preflight of a declared change (README "Your own tables"): what
-- register_change(CHANGE, PLAN) followed by a drain would do now, without
-- doing it, in check_plan's shape with the targets' keys. Each target is
-- judged by the words of its chunk's conflict, by the change's generated
-- check preview_<name>(tenant, targets) (change_check_sql: the same CASE the
-- generated function raises), with no row lock.
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
  v_targets jsonb;
  v_warning text;
begin
  select p.name, p.definition, p.digest, p.approval into v_change  -- 22023 naming the field
    from valid_change_plan(check_change.change, check_change.plan) as p;
  v_plan := v_change.approval;
  v_job_id := v_plan ->> 'job_id';
  select j.next_index into v_next_index from jobs as j where j.job_id = v_job_id;
  v_problem := job_identity_problem(v_job_id, v_change.name, v_change.digest, v_plan ->> 'tenant', v_plan -> 'targets',
                                    (v_plan -> 'chunk_size')::integer);
  v_warning := change_code_warning(to_regclass(v_change.definition ->> 'table'));
  if v_warning is not null then
    raise notice '%', v_warning;
  end if;
  -- The change's generated check (change_judge: its preview_<name>, as
  -- chunks made it): one call, planned once.
  v_targets := change_judge(v_change.definition, false, v_plan ->> 'tenant', v_plan -> 'targets');
  return check_answer(v_job_id, v_next_index is not null, v_next_index, v_problem, v_targets, 'key');
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
