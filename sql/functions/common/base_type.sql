-- The type a value of type TYP (with TYPMOD) is under its domains: each
-- domain's base type in turn, with the typmod the innermost domain gives
-- it; for an array, an array of its element's base type. BASE is
-- format_type's text with the typmod, BASE_ID the type without it. A
-- cast to BASE runs no domain's check (code its owner wrote); the input
-- functions of base types are C, installed by a superuser. One row.
create or replace function {{ .schema }}.base_type(typ oid, typmod integer, out base text, out base_id regtype)
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  with recursive a as (
    -- an array (its element's array type) is resolved by its element
    select coalesce((select e.oid from pg_type as e where e.typarray = base_type.typ), base_type.typ) as elem,
           exists (select from pg_type as e where e.typarray = base_type.typ) as is_array
  ), d(oid, typmod, depth) as (
    -- (an array's typmod is its element's)
    select a.elem, base_type.typmod, 0 from a
    union all
    select t.typbasetype, t.typtypmod, d.depth + 1
      from d join pg_type as t on t.oid = d.oid
     where t.typtype = 'd'
  )
  select format_type(r.oid, r.typmod) || case when a.is_array then '[]' else '' end,
         case when a.is_array then (select e.typarray from pg_type as e where e.oid = r.oid) else r.oid end::regtype
    from a
   cross join (select d.oid, d.typmod from d order by d.depth desc limit 1) as r
$$;
comment on function {{ .schema }}.base_type(oid, integer) is
  'chunks helper: the base type of TYP (with TYPMOD) under its domains (an array: of its element''s base type): BASE with the typmod, BASE_ID without; a cast to it runs no domain''s check.';
