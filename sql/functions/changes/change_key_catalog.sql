-- A declared change's key in the catalog (change_key.sql has its shapes):
-- which unique index makes it a key, which types may be key columns, and
-- the equality operator the generated code compares a key column with.

-- The key in the catalog: whether INDEX is a unique index whose key
-- columns are exactly COLS (in any order), valid, neither partial nor on
-- expressions (INCLUDE columns aside), so that a value of COLS names one
-- row.
create or replace function {{ .schema }}.key_index_matches(index oid, cols text[]) returns boolean
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select coalesce(bool_and(i.indisunique and i.indisvalid and i.indpred is null and i.indexprs is null
                           and i.indnkeyatts = pg_catalog.cardinality(key_index_matches.cols)
                           and (select pg_catalog.count(*) from pg_catalog.generate_series(0, i.indnkeyatts - 1) as k
                                  join pg_catalog.pg_attribute as a on a.attrelid = i.indrelid and a.attnum = i.indkey[k]
                                 where a.attname = any (key_index_matches.cols)) = pg_catalog.cardinality(key_index_matches.cols)), false)
    from pg_catalog.pg_index as i
   where i.indexrelid = key_index_matches.index
$$;
comment on function {{ .schema }}.key_index_matches(oid, text[]) is
  'chunks helper: whether INDEX is a valid, non-partial unique index without expressions whose key columns are exactly COLS.';

-- Whether a column of type TYP can be a key column: its type (a domain's
-- base type) has a default btree operator class, directly, through a
-- binary-coercible cast (varchar to text), or as an enum, array or range.
create or replace function {{ .schema }}.key_type_sortable(typ regtype) returns boolean
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  with recursive base(oid, basetype) as (
    select t.oid, t.typbasetype from pg_type as t where t.oid = key_type_sortable.typ
    union all
    select t.oid, t.typbasetype from pg_type as t join base as b on t.oid = b.basetype where b.basetype <> 0
  )
  select exists (
    select from pg_opclass as oc
      join pg_am as am on am.oid = oc.opcmethod and am.amname = 'btree'
      join pg_type as t on t.oid = (select b.oid from base as b where b.basetype = 0)
     where oc.opcdefault
       and (oc.opcintype = t.oid
            or oc.opcintype = 'anyenum'::regtype and t.typtype = 'e'
            or oc.opcintype = 'anyarray'::regtype and t.typcategory = 'A'
            or oc.opcintype = 'anyrange'::regtype and t.typtype = 'r'
            or exists (select from pg_cast as c where c.castsource = t.oid and c.casttarget = oc.opcintype and c.castmethod = 'b')))
$$;
comment on function {{ .schema }}.key_type_sortable(regtype) is
  'chunks helper: whether type TYP (a domain: its base type) has a default btree operator class, so a key column of it can be sorted and locked in order.';

-- The equality operator of the default btree operator class of TYP (a
-- domain's base type's), or NULL: what a key column of TYP is compared with.
create or replace function {{ .schema }}.key_equality_operator(typ regtype) returns oid
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select ao.amopopr
    from pg_opclass as oc
    join pg_am as am on am.oid = oc.opcmethod and am.amname = 'btree'
    join pg_amop as ao on ao.amopfamily = oc.opcfamily and ao.amopstrategy = 3
                      and ao.amoplefttype = oc.opcintype and ao.amoprighttype = oc.opcintype
   where oc.opcdefault
     and oc.opcintype in (key_equality_operator.typ, (select t.typbasetype from pg_type as t where t.oid = key_equality_operator.typ))
   order by oc.opcintype = key_equality_operator.typ desc
   limit 1
$$;
comment on function {{ .schema }}.key_equality_operator(regtype) is
  'chunks helper: the equality operator of the default btree operator class of TYP (or of its base type), or NULL.';

-- That operator as SQL text: "=" when it is PostgreSQL's own, else
-- OPERATOR(schema.=) (citext's), which the writer's search_path
-- (pg_catalog) would not find: there, "=" would compare two citext values
-- as text, case and all, and use no index. The writer needs USAGE on that
-- schema (change_table_problem says so).
create or replace function {{ .schema }}.key_equality_sql(typ regtype) returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select coalesce((select case when n.nspname = 'pg_catalog' then '=' else format('operator(%I.%s)', n.nspname, o.oprname) end
                     from pg_operator as o join pg_namespace as n on n.oid = o.oprnamespace
                    where o.oid = key_equality_operator(key_equality_sql.typ)), '=')
$$;
comment on function {{ .schema }}.key_equality_sql(regtype) is
  'chunks helper: SQL text of the equality operator of the default btree operator class of TYP ("=" for PostgreSQL''s own, else OPERATOR(schema.=)).';

-- The equality operator of key column COL of the change's table, as SQL
-- text (key_equality_sql).
create or replace function {{ .schema }}.key_column_equality_sql(definition jsonb, col text) returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select key_equality_sql(a.atttypid) from pg_attribute as a
   where a.attrelid = to_regclass(definition ->> 'table') and a.attname = col and a.attnum > 0 and not a.attisdropped
$$;
comment on function {{ .schema }}.key_column_equality_sql(jsonb, text) is
  'chunks helper: SQL text of the equality operator of key column COL of the declared change DEFINITION''s table.';

-- SQL text: A and B (SQL expressions of values of column COL of the change
-- DEFINITION's table) are distinct, by that column's type's own equality
-- (its default btree operator class's): IS DISTINCT FROM for PostgreSQL's
-- own types, as before (json, which has no equality, compared as jsonb),
-- and for an extension's type (citext) its operator
-- named in full, NULL-safe: the generated code runs with search_path
-- pg_catalog, where IS DISTINCT FROM of two citext values would resolve to
-- text's operator (case-sensitive). A type with no btree equality keeps
-- IS DISTINCT FROM.
create or replace function {{ .schema }}.column_distinct_sql(definition jsonb, col text, a text, b text) returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select case when x.json then format('(%s)::jsonb is distinct from (%s)::jsonb', a, b)
              when x.op = '=' then format('%s is distinct from %s', a, b)
              else format('(case when (%1$s) is null or (%2$s) is null then ((%1$s) is null) <> ((%2$s) is null) else not ((%1$s) %3$s (%2$s)) end)',
                          a, b, x.op) end
    from (select coalesce(key_column_equality_sql(definition, col), '=') as op,
                 -- json has no equality: two json values are the same when they are as jsonb
                 exists (select from pg_attribute as at cross join lateral base_type(at.atttypid, at.atttypmod) as bt
                          where at.attrelid = to_regclass(definition ->> 'table') and at.attname = col
                            and bt.base_id = 'json'::regtype) as json) as x
$$;
comment on function {{ .schema }}.column_distinct_sql(jsonb, text, text, text) is
  'chunks helper: SQL text that A and B, values of column COL of the change DEFINITION''s table, are distinct by the column type''s own btree equality (IS DISTINCT FROM for PostgreSQL''s types; the extension''s operator named in full, NULL-safe, otherwise).';
