-- With a tenant column, a job's tenant must be one of its values as the
-- column prints it (the generated function compares the row's tenant as
-- text), so that "042" or "acme" for an integer column is refused when the
-- job is registered (valid_change_plan, campaign_create_change), not at
-- every chunk. 22023 naming tenant; nothing without a tenant column.
create or replace function {{ .schema }}.check_change_tenant(definition jsonb, tenant text) returns void
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_type regtype;
  v_canonical text;
begin
  if not check_change_tenant.definition ? 'tenant' then
    return;
  end if;
  select a.atttypid::regtype into v_type
    from pg_attribute as a
   where a.attrelid = to_regclass(check_change_tenant.definition ->> 'table') and a.attname = check_change_tenant.definition ->> 'tenant';
  begin
    -- As the writer role: a domain's check is code its owner wrote.
    v_canonical := writer_run(format($q$select to_jsonb(($1 #>> '{}')::%s::text)$q$, v_type), to_jsonb(check_change_tenant.tenant), null) #>> '{}';
  exception when data_exception or integrity_constraint_violation or raise_exception then
    v_canonical := null;
  end;
  if v_canonical is distinct from check_change_tenant.tenant then
    raise exception 'tenant: must be a value of column %.% (%) as it prints, got %', check_change_tenant.definition ->> 'table',
      check_change_tenant.definition ->> 'tenant', v_type, excerpt(check_change_tenant.tenant, true) using errcode = '22023';
  end if;
end
$$;
comment on function {{ .schema }}.check_change_tenant(jsonb, text) is
  'chunks helper: 22023 naming tenant unless TENANT is a value of the tenant column of the declared change DEFINITION as that column prints it (nothing to check without one).';
