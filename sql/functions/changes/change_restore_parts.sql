-- The parts of a declared change's inverse (change_function_sql with
-- restore), which an undo (register_undo) runs, as text, in the shapes of
-- change_sql_parts: TARGETS_CTE, "t as materialized (...)", the undo's
-- targets of the jsonb expression TARGETS: the key and the version typed by
-- their columns, "?after" (the values the undone job wrote) and "?before"
-- (the values it found), as jsonb, with their position as "?ordinal";
-- COMPARED, the select list of the row r's columns the check reads;
-- PROBLEM, a CASE over t and l (its row) that is NULL when the row is still
-- as the undone job left it, else the first difference in words (missing,
-- another tenant, the version, a WRITTEN column), naming the key; SETS, the
-- update's set list: each WRITTEN column to its before value, cast to the
-- column's type, and version + 1. DEFINITION was validated by define_change.
create or replace function {{ .schema }}.change_restore_parts(definition jsonb, targets text, tenant text, written text[],
                                                              out targets_cte text, out compared text, out problem text,
                                                              out sets text)
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_def jsonb := change_restore_parts.definition;
  v_rel regclass := to_regclass(v_def ->> 'table');
  v_words text := change_key_words_sql(v_def, 't');
  v_tenant text := v_def ->> 'tenant';
  v_version text := v_def ->> 'version';
  v_c text;
begin
  select format('t as materialized (select x.* from rows from (jsonb_to_recordset(%s) as (%s, "?after" jsonb, "?before" jsonb)) with ordinality as x(%s, "?after", "?before", "?ordinal"))',
                change_restore_parts.targets, string_agg(format('%I %s', f.field, f.type), ', ' order by f.ord),
                string_agg(format('%I', f.field), ', ' order by f.ord))
    into targets_cte
    from change_fields(v_def) as f
   where f.role in ('key', 'version');
  -- The undo of a change that deletes puts rows back: a target can take it
  -- while no row has its key (its image is the audit's "?before"); one that
  -- exists again is the difference. No set list: it inserts.
  if v_def ? 'delete' then
    compared := (select string_agg(format('r.%I', c), ', ' order by o) from unnest(change_key_columns(v_def)) with ordinality as k(c, o));
    problem := format('case when l.%I is not null then format(%L, %s) end', (change_key_columns(v_def))[1],
                      '%s: a row has this key again', v_words);
    return;
  end if;
  compared := (select string_agg(format('r.%I', c), ', ' order by c)
                 from (select distinct c from unnest(change_key_columns(v_def) || array[v_tenant, v_version] || change_restore_parts.written) as c
                        where c is not null) as d);
  problem := change_problem_start(v_def, change_restore_parts.tenant);
  if v_version is not null then
    problem := problem || format(E'\n               when l.%1$I is distinct from t.%1$I then format(%2$L, %3$s, %1$L, %4$s, t.%1$I)',
                                   v_version, '%s: %s is %s, the undone job left %s', v_words,
                                   shown_sql(v_rel::text, v_version, format('l.%I::text', v_version)));
  end if;
  -- A written column compares with what the undone job left as a value of
  -- its type (change_audit keeps it as jsonb), never as text: a
  -- timestamptz's text depends on the session's TimeZone.
  foreach v_c in array change_restore_parts.written loop
    problem := problem || format(E'\n               when %2$s then format(%3$L, %4$s, %1$L, %5$s, %6$s)',
                                   v_c, column_distinct_sql(v_def, v_c, format('l.%I', v_c),
                                                            typed_field_sql('t."?after"', v_c, change_column_type(v_rel, v_c))),
                                   '%s: %s is %s, the undone job left %s', v_words,
                                   shown_sql(v_rel::text, v_c, excerpt_sql(format('l.%I::text', v_c))), excerpt_sql(format('t."?after" ->> %L', v_c)));
  end loop;
  problem := problem || E'\n                 end';
  -- Each column read back from the audit's jsonb as its type alone (a
  -- record of the whole table would check every NOT NULL domain column
  -- the audit does not hold).
  select string_agg(format('%I = %s', c, typed_field_sql('t."?before"', c, change_column_type(v_rel, c))), ', ' order by o)
         || case when v_version is not null then format(', %1$I = l.%1$I + 1', v_version) else '' end
    into sets
    from unnest(change_restore_parts.written) with ordinality as w(c, o);
end
$$;
comment on function {{ .schema }}.change_restore_parts(jsonb, text, text, text[]) is
  'chunks helper: the SQL text of a declared change''s inverse (change_function_sql with restore, run by an undo): the typed targets CTE over TARGETS (key, version, "?after", "?before"), the columns the check reads, the CASE naming the first difference from what the undone job left (TENANT: the tenant expression), and the set list restoring the WRITTEN columns with version + 1.';

-- The SQL text of field COL of the jsonb object expression OBJ as a value
-- of type TYPE (jsonb_to_record: a JSON array, object, number or string is
-- read as the type reads it, as change_audit's values were made by
-- to_jsonb), NULL when the field is absent or null.
create or replace function {{ .schema }}.typed_field_sql(obj text, col text, type text) returns text
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select format('(select x.%1$I from jsonb_to_record(%2$s) as x(%1$I %3$s))', typed_field_sql.col, typed_field_sql.obj,
                typed_field_sql.type)
$$;
comment on function {{ .schema }}.typed_field_sql(text, text, text) is
  'chunks helper: SQL text reading field COL of the jsonb object OBJ as a value of TYPE (jsonb_to_record), for typed comparisons and restores.';

-- The type of column COL of REL as format_type writes it.
create or replace function {{ .schema }}.change_column_type(rel regclass, col text) returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select format_type(a.atttypid, a.atttypmod) from pg_attribute as a
   where a.attrelid = change_column_type.rel and a.attname = change_column_type.col and a.attnum > 0 and not a.attisdropped
$$;
comment on function {{ .schema }}.change_column_type(regclass, text) is
  'chunks helper: the type of column COL of table REL, as format_type writes it (NULL when there is none).';
