-- Why the key of the declared change DEFINITION no longer names one row of
-- its table, or NULL: its unique index was dropped, or the table has
-- inheritance children (a key is unique in a table alone). run_chunk asks
-- it before every chunk (lookups by oid), register before every approval.
-- A set-returning SQL function of one row at most, with no SET clause and
-- each name qualified, so that the planner inlines it into the FROM of its
-- caller: run_chunk asks it before every chunk, planned once.
create or replace function {{ .schema }}.change_key_problem(definition jsonb) returns setof text
language sql stable
as $$
  select case
    when c.oid is null then format('table %s no longer exists', change_key_problem.definition ->> 'table')
    -- key_index_matches written out (no call: inlined, planned once).
    when not exists (select from pg_catalog.pg_index as i
                      where i.indrelid = c.oid and i.indisunique and i.indisvalid and i.indpred is null and i.indexprs is null
                        and i.indnkeyatts = pg_catalog.cardinality(k.cols)
                        and (select pg_catalog.count(*) from pg_catalog.generate_series(0, i.indnkeyatts - 1) as n
                               join pg_catalog.pg_attribute as a on a.attrelid = c.oid and a.attnum = i.indkey[n]
                              where a.attname = any (k.cols)) = pg_catalog.cardinality(k.cols)) then
      case when pg_catalog.jsonb_typeof(change_key_problem.definition -> 'key') = 'array'
           then pg_catalog.format('key: columns (%s) of %s are no longer unique together (their unique index was dropped, or a column renamed)',
                                  (select pg_catalog.string_agg(pg_catalog.quote_ident(col), ', ')
                                     from pg_catalog.jsonb_array_elements_text(change_key_problem.definition -> 'key') as col), c.oid::regclass)
           else pg_catalog.format('key: column %s.%s is no longer unique on its own (its unique index was dropped, or the column renamed)', c.oid::regclass,
                                  pg_catalog.quote_ident(change_key_problem.definition ->> 'key')) end
    -- relhassubclass: it has, or had, children (pg_inherits says which).
    when c.relkind = 'r' and c.relhassubclass and exists (select from pg_catalog.pg_inherits as h where h.inhparent = c.oid) then
      format('table %s has inheritance children: its key is unique in it alone, not in them', c.oid::regclass)
  end
    from (select pg_catalog.to_regclass(change_key_problem.definition ->> 'table') as oid) as r
   cross join (select case pg_catalog.jsonb_typeof(change_key_problem.definition -> 'key')
                        when 'array' then array(select pg_catalog.jsonb_array_elements_text(change_key_problem.definition -> 'key'))
                        else array[change_key_problem.definition ->> 'key'] end as cols) as k
    left join pg_catalog.pg_class as c on c.oid = r.oid
$$;
comment on function {{ .schema }}.change_key_problem(jsonb) is
  'chunks helper: why the key of the declared change DEFINITION no longer names one row (the table gone, no unique index of exactly the key column, inheritance children), or NULL: one row. Inlined into its caller''s FROM.';
