-- A change with a tenant column: the plan's TENANT must be one of that
-- column's values as it prints (the generated function compares the row's
-- tenant as text), so that "042" or "acme" for an integer column is
-- refused when the job is registered, not at every chunk. 22023 otherwise.
create or replace function {{ .schema }}.check_change_tenant(definition jsonb, tenant text) returns void
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_type text;
  v_canonical text;
begin
  if not check_change_tenant.definition ? 'tenant' then
    return;
  end if;
  select format_type(a.atttypid, a.atttypmod) into v_type
    from pg_attribute as a
   where a.attrelid = to_regclass(check_change_tenant.definition ->> 'table') and a.attname = check_change_tenant.definition ->> 'tenant';
  begin
    execute format('select $1::%s::text', v_type) into v_canonical using check_change_tenant.tenant;
  exception when others then
    v_canonical := null;
  end;
  if v_canonical is distinct from check_change_tenant.tenant then
    raise exception 'tenant: must be a value of column %.% (%) as it prints, got %', check_change_tenant.definition ->> 'table',
      check_change_tenant.definition ->> 'tenant', v_type, excerpt(check_change_tenant.tenant, true) using errcode = '22023';
  end if;
end
$$;
comment on function {{ .schema }}.check_change_tenant(jsonb, text) is
  'chunks helper: raises 22023 unless TENANT is a value of the tenant column of the change DEFINITION as that column prints it (no-op without a tenant column).';
