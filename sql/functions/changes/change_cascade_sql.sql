-- The child tables of DEFINITION's cascade, as regclass (none: {}).
create or replace function {{ .schema }}.change_cascade(definition jsonb) returns regclass[]
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select coalesce(array_agg(to_regclass(e) order by o) filter (where to_regclass(e) is not null), '{}')
    from jsonb_array_elements_text(case when jsonb_typeof(change_cascade.definition -> 'cascade') = 'array'
                                        then change_cascade.definition -> 'cascade' else '[]' end) with ordinality as x(e, o)
$$;
comment on function {{ .schema }}.change_cascade(jsonb) is
  'chunks helper: the child tables that the declared change DEFINITION, which deletes, names in cascade (regclass; unknown names left out).';

-- The SQL text of a change that deletes (DEFINITION) for the children of
-- its cascade (change_cascade), for change_function_sql. PART 'image': a
-- jsonb expression over the parent row L being deleted, {"?cascade":
-- {"CHILD": [each child row's to_jsonb, ...]}} ({} without cascade), read
-- in the DELETE's RETURNING, before the cascade (an AFTER trigger at the
-- end of the statement) deletes them. PART 'restore': CTEs, after the
-- undo's "ins" (the parents put back) and "t" (its targets, whose
-- "?before" is the image), that put each child row back, every column but
-- the generated ones (overriding system value).
create or replace function {{ .schema }}.change_cascade_sql(definition jsonb, part text) returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select case change_cascade_sql.part
           when 'image' then case when count(*) = 0 then '''{}''::jsonb'
                                  else format('jsonb_build_object(%L, jsonb_build_object(%s))', '?cascade',
                                              string_agg(format('%L, (select coalesce(jsonb_agg(to_jsonb(c)), %L) from %s as c where %s)',
                                                                k.child::text, '[]', k.child, k.match), ', ' order by k.o)) end
           else coalesce(string_agg(format(E',\n  %I as (\n    insert into %s (%s) overriding system value\n    select %s\n      from ins join t on %s\n     cross join lateral jsonb_populate_recordset(null::%s, t."?before" -> %L -> %L) as r\n  )',
                                           'cascade_' || k.o, k.child, k.cols, k.rcols, change_key_equal_sql(change_cascade_sql.definition, 'ins', 't'),
                                           k.child, '?cascade', k.child::text), '' order by k.o), '') end
    from (select x.child, x.o,
                 (select string_agg(format('(%s)', (select string_agg(format('c.%I = l.%I', ca.attname, pa.attname), ' and ' order by u.n)
                                                      from unnest(co.conkey, co.confkey) with ordinality as u(ck, pk, n)
                                                      join pg_attribute as ca on ca.attrelid = co.conrelid and ca.attnum = u.ck
                                                      join pg_attribute as pa on pa.attrelid = co.confrelid and pa.attnum = u.pk)), ' or ')
                    from pg_constraint as co
                   where co.contype = 'f' and co.conrelid = x.child and co.confrelid = to_regclass(change_cascade_sql.definition ->> 'table')
                     and co.confdeltype = 'c') as match,
                 (select string_agg(format('%I', a.attname), ', ' order by a.attnum) from pg_attribute as a
                   where a.attrelid = x.child and a.attnum > 0 and not a.attisdropped and a.attgenerated = '') as cols,
                 (select string_agg(format('r.%I', a.attname), ', ' order by a.attnum) from pg_attribute as a
                   where a.attrelid = x.child and a.attnum > 0 and not a.attisdropped and a.attgenerated = '') as rcols
            from unnest(change_cascade(change_cascade_sql.definition)) with ordinality as x(child, o)) as k
$$;
comment on function {{ .schema }}.change_cascade_sql(jsonb, text) is
  'chunks helper (change_function_sql): for a change that deletes, the image of the cascade children of the parent row l (PART image, a jsonb expression) or the CTEs that put them back after the undo''s parents (PART restore).';
