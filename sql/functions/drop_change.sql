-- Drops a declared change and its generated function; only the schema's
-- owner may (SECURITY INVOKER, granted to nobody), and never while a job
-- of the change exists (CH409): its approval names the change.
create or replace function {{ .schema }}.drop_change(name text) returns boolean
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_owner oid;
  v_jobs bigint;
  v_function text;
begin
  select n.nspowner into v_owner from pg_namespace as n where n.nspname = '{{ .schema }}';
  if not pg_has_role(current_user, v_owner, 'MEMBER') then
    raise exception 'drop_change: only the owner of schema {{ .schema }} (%) may drop a change', v_owner::regrole
      using errcode = '42501';
  end if;
  if drop_change.name is null or drop_change.name !~ '^[a-z][a-z0-9_]{0,39}$' then
    raise exception 'name: must be 1 to 40 lower-case ASCII letters, digits or _, starting with a letter, got %',
      excerpt(drop_change.name, true) using errcode = '22023';
  end if;
  select c.function_name into v_function from changes as c where c.name = drop_change.name for update;
  if not found then
    return false;
  end if;
  select count(*) into v_jobs from job_change as jc where jc.change = drop_change.name;
  if v_jobs > 0 then
    raise exception 'change %: % jobs of it exist; a change is dropped only when none does', drop_change.name, v_jobs
      using errcode = 'CH409';
  end if;
  execute format('drop function if exists %I.%I(text, text, integer, jsonb)', '{{ .schema }}', v_function);
  delete from changes as c where c.name = drop_change.name;
  return true;
end
$$;
comment on function {{ .schema }}.drop_change(text) is
  'Drops the declared change NAME and its generated function apply_<name>; true when it was there, false when there is no such change. Only the schema''s owner may (42501). Errors: 22023 bad name; CH409 while any job of the change exists.';
