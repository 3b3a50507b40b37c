-- The three statements of change_target_list for a change's DEFINITION,
-- built from its fields (quoted by format %L, types by format_type): PART
-- 'check' finds the first target with a problem ($1 the items, $2 the
-- sorted field names); 'verify', run as the writer role, casts every value
-- to its column's type and returns whether none is rounded or cut and no
-- version is at its type's largest value ($1 the items); 'sort' returns
-- the targets typed by their base types (change_fields: no domain's check
-- runs) in key order, the place of the first target whose key an
-- earlier one has, and each sorted target's place in the items ($1 the
-- items); 'first' the place of the first target
-- with the key of the target at place $2, and that target typed.
create or replace function {{ .schema }}.change_target_list_sql(definition jsonb, part text) returns text
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  select case change_target_list_sql.part
           when 'check' then format($q$
             select x.ord from jsonb_array_elements($1) with ordinality as x(e, ord)
              where not coalesce(jsonb_typeof(x.e) = 'object' and x.e ?& $2 and x.e - $2 = '{}'::jsonb and %s, false)
              order by x.ord limit 1$q$,
             string_agg(format('jsonb_typeof(x.e -> %L) %s', f.field,
                               case when f.role = 'expect' then format('in (%L, ''null'')', j.type) else format('= %L', j.type) end)
                        || case when f.role = 'version' then format(' and scale((x.e -> %1$L)::numeric) = 0 and (x.e -> %1$L)::numeric >= 0', f.field) else '' end,
                        ' and ' order by f.ord))
           when 'verify' then format('select to_jsonb(coalesce(bool_and(%s), true)) from jsonb_array_elements($1) as x(e)',
             string_agg(case when f.base = format_type(f.base_id, null)
                             then format('((x.e ->> %1$L)::%2$s is not null or x.e ->> %1$L is null)', f.field, f.type)
                             else format('(x.e ->> %1$L)::%2$s is not distinct from (x.e ->> %1$L)::%3$s::%2$s', f.field, f.base_id, f.type) end
                        || case when f.role = 'version' then format(' and (x.e ->> %L)::numeric < %s', f.field,
                                                                      case f.typid when 'smallint'::regtype then '32767'
                                                                                   when 'integer'::regtype then '2147483647'
                                                                                   else '9223372036854775807' end)
                                else '' end, ' and ' order by f.ord))
           when 'sort' then format($q$
             select array_agg(y.o order by %1$s, y.ord), min(y.ord) filter (where y.again), array_agg(y.ord::integer order by %1$s, y.ord)
               from (select x.ord, t.o, %2$s, %3$s as again
                       from jsonb_array_elements($1) with ordinality as x(e, ord)
                      cross join lateral (select jsonb_build_object(%4$s) as o) as t
                     window w as (order by %5$s, x.ord)) as y$q$,
             string_agg(format('y.%I', 'k' || f.ord), ', ' order by f.ord) filter (where f.role = 'key'),
             string_agg(format('(x.e ->> %L)::%s as %I', f.field, f.base, 'k' || f.ord), ', ' order by f.ord) filter (where f.role = 'key'),
             -- (equal by the key type's own equality: citext's is not text's)
             string_agg(format('(x.e ->> %1$L)::%2$s %3$s lag((x.e ->> %1$L)::%2$s) over w', f.field, f.base,
                               key_column_equality_sql(change_target_list_sql.definition, f."column")), ' and ' order by f.ord)
               filter (where f.role = 'key'),
             string_agg(format('%L, to_jsonb((x.e ->> %L)::%s)', f.field, f.field, f.base), ', ' order by f.ord),
             string_agg(format('(x.e ->> %L)::%s', f.field, f.base), ', ' order by f.ord) filter (where f.role = 'key'))
           when 'first' then format($q$
             select x.ord, jsonb_build_object(%1$s)
               from jsonb_array_elements($1) with ordinality as x(e, ord)
              where %2$s
              order by x.ord limit 1$q$,
             string_agg(format('%L, to_jsonb((x.e ->> %L)::%s)', f.field, f.field, f.base), ', ' order by f.ord),
             string_agg(format('(x.e ->> %1$L)::%2$s %3$s ($1 -> ($2::integer - 1) ->> %1$L)::%2$s', f.field, f.base,
                               key_column_equality_sql(change_target_list_sql.definition, f."column")), ' and ' order by f.ord)
               filter (where f.role = 'key'))
         end
    from change_fields(change_target_list_sql.definition) as f
   cross join lateral (select case f.category when 'N' then 'number' when 'B' then 'boolean' else 'string' end as type) as j
$$;
comment on function {{ .schema }}.change_target_list_sql(jsonb, text) is
  'chunks helper: the statement of change_target_list that checks (PART check), verifies as the writer role (PART verify), types and sorts (PART sort) the targets, or finds the first target with a key (PART first), of the declared change DEFINITION.';
