-- The start of the CASE that names a row's first difference from its
-- target, shared by a declared change's check (change_sql_parts) and its
-- inverse's (change_restore_parts), as text over t (the target) and l (its
-- row, all NULL when missing): missing, then another tenant (the text
-- expression TENANT) when the change has one, naming the key. The callers
-- add their own WHENs and the END. DEFINITION was validated by define_change.
create or replace function {{ .schema }}.change_problem_start(definition jsonb, tenant text) returns text
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_key text := change_problem_start.definition ->> 'key';
  v_tenant text := change_problem_start.definition ->> 'tenant';
  v_start text;
begin
  v_start := 'case' || format(E'\n               when l.%I is null then format(%L, %L, t.%I)', v_key, '%s %s: missing', v_key, v_key);
  if v_tenant is not null then
    v_start := v_start || format(E'\n               when l.%I::text is distinct from %s then format(%L, %L, t.%I)',
                                 v_tenant, change_problem_start.tenant, '%s %s: belongs to another tenant', v_key, v_key);
  end if;
  return v_start;
end
$$;
comment on function {{ .schema }}.change_problem_start(jsonb, text) is
  'chunks helper: the start of the CASE naming a declared change''s row''s first difference from its target (missing; another tenant, TENANT the tenant expression), for change_sql_parts and change_restore_parts.';
