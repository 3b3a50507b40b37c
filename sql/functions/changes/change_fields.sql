-- The fields of a target of a declared change (README "Your own tables"),
-- in their order: the key's columns, the version, each expect column, then each
-- set_from_target field; with the column each one is compared with or
-- written to, that column's type (format_type's text, and as a regtype) and its type category
-- (pg_type.typcategory: N a number, B a boolean), its role
-- (key, version, expect, value), and its BASE type: the type under its
-- domains (an array's element's too), with the typmod the column or the
-- domain gives it, and BASE_ID that type without typmod. A value cast to
-- its base type runs no domain check, which is code the domain's owner
-- wrote: chunks' owner casts and sorts targets only as base types, and
-- leaves the column's own type to the writer role (change_target_list).
-- DEFINITION was validated by define_change.
-- (before schema version 12 it had no base columns: made again once)
do $$
begin
  if exists (select from pg_proc as p where p.oid = to_regprocedure('{{ .schema }}.change_fields(jsonb)')
                                        and not 'base_id' = any (p.proargnames)) then
    drop function {{ .schema }}.change_fields(jsonb);
  end if;
end
$$;
create or replace function {{ .schema }}.change_fields(definition jsonb)
returns table(field text, "column" text, type text, typid regtype, category "char", role text, ord integer,
              base text, base_id regtype)
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  select f.field, f.col, format_type(a.atttypid, a.atttypmod), a.atttypid::regtype, t.typcategory, f.role, f.ord,
         b.base, b.base_id
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
   cross join lateral base_type(a.atttypid, a.atttypmod) as b
   order by f.ord
$$;
comment on function {{ .schema }}.change_fields(jsonb) is
  'chunks helper: the fields of a target of the declared change DEFINITION in order (key, version, expect columns, set_from_target fields), each with its column, type, type category, role, and base type (under its domains; with and without typmod).';

-- Why chunks' owner may not type the targets of the change DEFINITION, or
-- NULL: it casts and sorts a target's values as their columns' base types
-- (change_fields), which run no domain's check, but a composite type or a
-- range type that is not PostgreSQL's own would still run the input of its
-- parts. define_change refuses such a field, and change_target_list the
-- targets of a change defined before that rule.
create or replace function {{ .schema }}.change_field_problem(definition jsonb) returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select format('%s: column %s.%s is %s; a field''s column is of a base type, an enum, an array or a domain of one',
                case f.role when 'value' then 'set_from_target' else f.role end, to_regclass(definition ->> 'table'),
                quote_ident(f."column"), f.type)
    from change_fields(definition) as f
    join pg_type as t on t.oid = f.base_id
    left join pg_type as e on e.typarray = t.oid
   where coalesce(e.typtype, t.typtype) = 'c'
      or coalesce(e.typtype, t.typtype) in ('r', 'm') and coalesce(e.typnamespace, t.typnamespace) <> 'pg_catalog'::regnamespace
   order by f.ord limit 1
$$;
comment on function {{ .schema }}.change_field_problem(jsonb) is
  'chunks helper: why chunks'' owner may not type the targets of the change DEFINITION (a field whose column is of a composite type or of a range type that is not PostgreSQL''s own), or NULL.';
