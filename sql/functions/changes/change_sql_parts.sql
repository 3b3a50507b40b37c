-- The parts of a declared change's SQL that its generated function
-- (change_function_sql) and its read-only check (check_change) share, as
-- text: TARGETS_CTE, "t as materialized (...)", the targets of the jsonb
-- expression TARGETS typed by their columns (jsonb_to_recordset), with
-- their position as "?ordinal"; COMPARED, the select list of the row r's
-- columns the check reads; PROBLEM, a CASE over t (the target) and l (its
-- row, all NULL when missing) that is NULL when the row can take the
-- change now, else the first difference in words: missing, another tenant
-- (the text expression TENANT), a when constant, the version, an expect
-- column, naming the key. DEFINITION was validated by define_change.
create or replace function {{ .schema }}.change_sql_parts(definition jsonb, targets text, tenant text,
                                                          out targets_cte text, out compared text, out problem text)
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_def jsonb := change_sql_parts.definition;
  v_rel regclass := to_regclass(v_def ->> 'table');
  v_words text := change_key_words_sql(v_def, 't');
  v_tenant text := v_def ->> 'tenant';
  v_version text := v_def ->> 'version';
  v_fields text[];
  v_types text[];
  v_coldefs text;
  v_colnames text;
  v_k text;
  v_v jsonb;
  v_type text;
  -- The contract's words for orders_change() (order_problem's): a value as
  -- it is, and no "the change requires".
  v_contract constant boolean := v_def ->> 'words' = 'order';
begin
  select array_agg(f.field order by f.ord), array_agg(f.type order by f.ord) into v_fields, v_types
    from change_fields(v_def) as f;
  select string_agg(format('%I %s', f, t), ', ' order by o), string_agg(format('%I', f), ', ' order by o)
    into v_coldefs, v_colnames
    from unnest(v_fields, v_types) with ordinality as x(f, t, o);
  targets_cte := format('t as materialized (select x.* from rows from (jsonb_to_recordset(%s) as (%s)) with ordinality as x(%s, "?ordinal"))',
                change_sql_parts.targets, v_coldefs, v_colnames);
  compared := (select string_agg(format('r.%I', c), ', ' order by c) from (select distinct c from unnest(change_key_columns(v_def) || array[v_tenant, v_version]
                                                   || array(select jsonb_array_elements_text(coalesce(v_def -> 'expect', '[]')))
                                                   || array(select jsonb_object_keys(coalesce(v_def -> 'when', '{}')))) as c
                       where c is not null) as d);
  -- The check, first difference first: missing, tenant, when, version, expect.
  problem := change_problem_start(v_def, change_sql_parts.tenant);
  -- A when constant, one of a list's (IN) or NULL (IS NULL).
  for v_k, v_v in select e.key, e.value from jsonb_each(coalesce(v_def -> 'when', '{}')) as e order by e.key loop
    v_type := change_column_type(v_rel, v_k);
    problem := problem || format(E'\n               when %s then format(%L, %s, %L, %s%s)',
                                   case jsonb_typeof(v_v)
                                     when 'null' then format('l.%I is not null', v_k)
                                     when 'array' then format('l.%1$I is null or not (l.%1$I %3$s any (array[%2$s]))', v_k,
                                                              (select string_agg(format('%L::%s', e #>> '{}', v_type), ', ' order by o)
                                                                 from jsonb_array_elements(v_v) with ordinality as x(e, o)),
                                                              coalesce(key_column_equality_sql(v_def, v_k), '='))
                                     else column_distinct_sql(v_def, v_k, format('l.%I', v_k), format('%L::%s', v_v #>> '{}', v_type)) end,
                                   case when v_contract then '%s: %s is %s' else '%s: %s is %s, the change requires %s' end, v_words, v_k,
                                   case when v_contract then format('l.%I::text', v_k)
                                        else shown_sql(v_rel::text, v_k, excerpt_sql(format('l.%I::text', v_k))) end,
                                   case when v_contract then '' else ', ' || quote_literal(case jsonb_typeof(v_v)
                                     when 'null' then 'null'
                                     when 'array' then 'one of ' || excerpt((select string_agg(e #>> '{}', ', ' order by o)
                                                                               from jsonb_array_elements(v_v) with ordinality as x(e, o)), false)
                                     else v_v #>> '{}' end) end);
  end loop;
  if v_version is not null then
    problem := problem || format(E'\n               when l.%I is distinct from t.%I then format(%L, %s, %L, %s, t.%I)',
                                   v_version, v_version, '%s: %s is %s, approved %s', v_words, v_version,
                                   case when v_contract then format('l.%I::text', v_version)
                                        else shown_sql(v_rel::text, v_version, format('l.%I::text', v_version)) end, v_version);
  end if;
  for v_k in select jsonb_array_elements_text(coalesce(v_def -> 'expect', '[]')) loop
    problem := problem || format(E'\n               when %6$s then format(%2$L, %3$s, %1$L, %4$s, %5$s)',
                                   v_k, '%s: %s is %s, approved %s', v_words,
                                   case when v_contract then format('l.%I::text', v_k)
                                        else shown_sql(v_rel::text, v_k, excerpt_sql(format('l.%I::text', v_k))) end,
                                   case when v_contract then format('t.%I::text', v_k) else excerpt_sql(format('t.%I::text', v_k)) end,
                                   column_distinct_sql(v_def, v_k, format('l.%I', v_k), format('t.%I', v_k)));
  end loop;
  problem := problem || E'\n                 end';
end
$$;
comment on function {{ .schema }}.change_sql_parts(jsonb, text, text) is
  'chunks helper: the SQL text shared by a declared change''s generated function and its check: the typed targets CTE over TARGETS, the columns the check reads, and the CASE naming the first difference (TENANT: the tenant expression).';
