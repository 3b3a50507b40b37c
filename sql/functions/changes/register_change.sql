-- register for a declared change (README "Your own tables"): PLAN has
-- register's five keys, validated as register validates them, and its
-- targets are the change's (change_targets). The job records its change
-- and the definition's digest (job_change) beside its approval
-- (job_approval, kind 'change'), and joins the queue as register's jobs do.
create or replace function {{ .schema }}.register_change(change text, plan jsonb) returns boolean
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_change record;
begin
  select p.name, p.digest, p.approval into v_change  -- 22023 naming the field
    from valid_change_plan(register_change.change, register_change.plan) as p;
  -- register's path (register_job), with the change and its digest.
  return register_job(v_change.name, v_change.digest, v_change.approval);
end
$$;
comment on function {{ .schema }}.register_change(text, jsonb) is
$c$Records an approved job of the declared change CHANGE; returns true when new, false when
the same approval is already there. PLAN has register's five keys (job_id, tenant, targets,
chunk_size, allow_partial); its targets are objects with exactly the change's fields (key,
version, expect columns, set_from_target fields), stored typed and sorted by key. The job
records its change and the definition's digest (job_change) and its approval (job_approval,
kind change), and joins the queue, as register's jobs do; run_chunk runs it with the
change's generated function.
Errors: 22023 bad input (names the field; an unknown change); CH409 a different job under this id.$c$;
