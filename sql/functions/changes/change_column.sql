-- A column of a declared change's table, for define_change: its number,
-- type (typid, and format_type's text with its modifier) and what a change may do
-- with it. 22023 naming FIELD when COLUMN is no column of REL.
create or replace function {{ .schema }}.change_column(rel oid, col text, field text,
                                                       out attnum smallint, out typid regtype, out type text,
                                                       out notnull boolean, out generated boolean, out identity boolean)
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  select a.attnum, a.atttypid::regtype, format_type(a.atttypid, a.atttypmod), a.attnotnull,
         a.attgenerated <> '', a.attidentity <> ''
    into attnum, typid, type, notnull, generated, identity
    from pg_attribute as a
   where a.attrelid = change_column.rel and a.attname = change_column.col and a.attnum > 0 and not a.attisdropped;
  if not found then
    raise exception '%: table % has no column %', change_column.field, change_column.rel::regclass,
      excerpt(change_column.col, true) using errcode = '22023';
  end if;
  -- The generated code names its own columns "?ordinal", "?key", ...
  if change_column.col like '?%' then
    raise exception '%: column % starts with ?, which chunks keeps for the columns of its generated code; rename it',
      change_column.field, excerpt(change_column.col, true) using errcode = '22023';
  end if;
end
$$;
comment on function {{ .schema }}.change_column(oid, text, text) is
  'chunks helper: the number, type and properties (NOT NULL, generated, identity) of COL of table REL, for define_change; 22023 naming FIELD when there is no such column.';
