-- The start of the CASE that names a row's first difference from its
-- target, shared by a declared change's check (change_sql_parts) and its
-- inverse's (change_restore_parts), as text over t (the target) and l (its
-- row, all NULL when missing): missing, then another tenant (the text
-- expression TENANT) when the change has one, naming the key. The callers
-- add their own WHENs and the END. DEFINITION was validated by define_change
-- (or is orders_change(), whose words are the contract's).
create or replace function {{ .schema }}.change_problem_start(definition jsonb, tenant text) returns text
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_words text := change_key_words_sql(change_problem_start.definition, 't');
  v_first text := (change_key_columns(change_problem_start.definition))[1];
  v_tenant text := change_problem_start.definition ->> 'tenant';
  v_start text;
  v_hidden text;
begin
  -- l.<first key column> is NULL only when the row is missing (a key
  -- column is NOT NULL).
  if change_problem_start.definition ->> 'words' = 'order' then
    -- The contract's words (order_problem): the tenant is the caller's own.
    v_start := 'case' || format(E'\n               when l.%1$I is null then format(%3$L, %4$s)\n               when l.%2$I::text is distinct from %5$s then format(%6$L, %4$s)',
                                v_first, v_tenant, '%s: missing', v_words, change_problem_start.tenant, '%s: belongs to another tenant');
  elsif v_tenant is null then
    v_start := 'case' || format(E'\n               when l.%I is null then format(%L, %s)', v_first, '%s: missing', v_words);
  else
    -- Missing and another tenant's are told apart only to a session whose
    -- login role may read the tenant column: to anyone else, "belongs to
    -- another tenant" would say that the row exists, and whose it is.
    v_hidden := format('format(%L, %s, %s)', '%s: not found in tenant %s', v_words, change_problem_start.tenant);
    v_start := 'case' || format(E'\n               when l.%1$I is null or l.%2$I::text is distinct from %3$s then (case when not pg_catalog.has_column_privilege(session_user, %4$L, %2$L, %5$L) then %6$s when l.%1$I is null then format(%7$L, %8$s) else format(%9$L, %8$s) end)',
                                v_first, v_tenant, change_problem_start.tenant, to_regclass(change_problem_start.definition ->> 'table')::text,
                                'SELECT', v_hidden, '%s: missing', v_words, '%s: belongs to another tenant');
  end if;
  return v_start;
end
$$;
comment on function {{ .schema }}.change_problem_start(jsonb, text) is
  'chunks helper: the start of the CASE naming a declared change''s row''s first difference from its target (missing; another tenant, TENANT the tenant expression), for change_sql_parts and change_restore_parts.';
