-- Drops a declared change and its generated function; only the schema's
-- owner may (SECURITY INVOKER, granted to nobody), and never while a job
-- of the change exists (CH409): its approval names the change.
create or replace function {{ .schema }}.drop_change(name text) returns boolean
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_jobs bigint;
  v_function text;
  v_digest text;
begin
  perform check_change_owner('drop_change');
  perform check_change_name(drop_change.name, 'name');
  select c.function_name, c.digest into v_function, v_digest from changes as c
   where c.name = drop_change.name and c.retired_at is null for update;
  if not found then
    return false;
  end if;
  select count(*) into v_jobs from job_change as jc where jc.change = drop_change.name and jc.digest = v_digest;
  if v_jobs > 0 then
    raise exception 'change %: % of it %; a change is dropped only when none does', drop_change.name,
      v_jobs || case when v_jobs = 1 then ' job' else ' jobs' end, case when v_jobs = 1 then 'exists' else 'exist' end
      using errcode = 'CH409';
  end if;
  perform drop_change_functions(v_function);
  delete from changes as c where c.name = drop_change.name and c.digest = v_digest;
  return true;
end
$$;
comment on function {{ .schema }}.drop_change(text) is
  'Drops the declared change NAME and its generated functions apply_<name>, restore_<name> and preview_<name> (the change, its inverse and its check); true when it was there, false when there is no such change. Only the schema''s owner may (42501). Errors: 22023 bad name; CH409 while any job of the change exists.';
