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
  v_plan jsonb;
  v_job_id text;
  v_problem text;
begin
  select p.name, p.definition, p.digest, p.approval into v_change  -- 22023 naming the field
    from valid_change_plan(register_change.change, register_change.plan) as p;
  v_plan := v_change.approval;
  v_job_id := v_plan ->> 'job_id';

  if record_job(v_job_id, v_plan ->> 'tenant', v_plan -> 'targets', (v_plan -> 'chunk_size')::integer, 'change', 'register_change') then
    insert into job_change (job_id, change, digest) values (v_job_id, v_change.name, v_change.digest);
    return true;
  end if;

  -- The id is taken: the same approval of the same change again is not an
  -- error, anything else is.
  v_problem := change_job_problem(v_job_id, v_change.name, v_change.digest, v_plan ->> 'tenant', v_plan -> 'targets',
                                  (v_plan -> 'chunk_size')::integer);
  if v_problem is null and not exists (select from jobs as j where j.job_id = v_job_id) then
    raise exception 'job %: was removed while registering', v_job_id using errcode = 'CH409';
  end if;
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'CH409';
  end if;
  return false;
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
