-- The fields of a target of a declared change (README "Your own tables"),
-- in their order: the key's columns, the version, each expect column, then each
-- set_from_target field; with the column each one is compared with or
-- written to, that column's type (format_type's text, and as a regtype) and its type category
-- (pg_type.typcategory: N a number, B a boolean), and its role
-- (key, version, expect, value). DEFINITION was validated by define_change.
create or replace function {{ .schema }}.change_fields(definition jsonb)
returns table(field text, "column" text, type text, typid regtype, category "char", role text, ord integer)
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  select f.field, f.col, format_type(a.atttypid, a.atttypmod), a.atttypid::regtype, t.typcategory, f.role, f.ord
    from (select k as field, k as col, 'key' as role, (o - 1000)::integer as ord
            from unnest(change_key_columns(definition)) with ordinality as x(k, o)
          union all
          select definition ->> 'version', definition ->> 'version', 'version', 1 where definition ? 'version'
          union all
          select e, e, 'expect', 1 + o::integer
            from jsonb_array_elements_text(coalesce(definition -> 'expect', '[]')) with ordinality as x(e, o)
          union all
          select s.value, s.key, 'value', 1000 + (row_number() over (order by s.key))::integer
            from jsonb_each_text(coalesce(definition -> 'set_from_target', '{}')) as s) as f
    join pg_attribute as a on a.attrelid = to_regclass(definition ->> 'table') and a.attname = f.col
    join pg_type as t on t.oid = a.atttypid
   order by f.ord
$$;
comment on function {{ .schema }}.change_fields(jsonb) is
  'chunks helper: the fields of a target of the declared change DEFINITION in order (key, version, expect columns, set_from_target fields), each with its column, type, type category and role.';
