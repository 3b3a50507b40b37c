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
    when not exists (select from pg_catalog.pg_index as i
                      where i.indrelid = c.oid and i.indisunique and i.indisvalid and i.indnatts = 1
                        and i.indkey[0] = (select a.attnum from pg_catalog.pg_attribute as a
                                            where a.attrelid = c.oid and a.attname = change_key_problem.definition ->> 'key'
                                              and not a.attisdropped)
                        and i.indpred is null and i.indexprs is null) then
      format('key: column %s.%s is no longer unique on its own (its unique index was dropped, or the column renamed)', c.oid::regclass,
             quote_ident(change_key_problem.definition ->> 'key'))
    -- relhassubclass: it has, or had, children (pg_inherits says which).
    when c.relkind = 'r' and c.relhassubclass and exists (select from pg_catalog.pg_inherits as h where h.inhparent = c.oid) then
      format('table %s has inheritance children: its key is unique in it alone, not in them', c.oid::regclass)
  end
    from (select to_regclass(change_key_problem.definition ->> 'table') as oid) as r
    left join pg_catalog.pg_class as c on c.oid = r.oid
$$;
comment on function {{ .schema }}.change_key_problem(jsonb) is
  'chunks helper: why the key of the declared change DEFINITION no longer names one row (the table gone, no unique index of exactly the key column, inheritance children), or NULL: one row. Inlined into its caller''s FROM.';
