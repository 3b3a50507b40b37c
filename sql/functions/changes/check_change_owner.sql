-- Only the owner of this schema (or a member of its role) declares or
-- drops a change: 42501 naming FUNCTION and the owner otherwise.
create or replace function {{ .schema }}.check_change_owner(function text) returns void
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_owner oid;
begin
  select n.nspowner into v_owner from pg_namespace as n where n.nspname = '{{ .schema }}';
  if not pg_has_role(current_user, v_owner, 'MEMBER') then
    raise exception '%: only the owner of schema {{ .schema }} (%) may declare, drop or retire a change', check_change_owner.function,
      v_owner::regrole using errcode = '42501';
  end if;
end
$$;
comment on function {{ .schema }}.check_change_owner(text) is
  'chunks helper: raises 42501 naming FUNCTION unless the current role is (a member of) the owner of this schema, who alone declares and drops changes.';
