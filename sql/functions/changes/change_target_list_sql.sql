-- The two statements of change_target_list for a change's DEFINITION, built
-- from its fields (quoted by format %L, types as regtypes): PART 'check'
-- finds the first target with a problem ($1 the items, $2 the sorted field
-- names), 'cast' casts every value to its column's type ($1 the items).
create or replace function {{ .schema }}.change_target_list_sql(definition jsonb, part text) returns text
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  select case change_target_list_sql.part
           when 'check' then format($q$
             select x.ord from jsonb_array_elements($1) with ordinality as x(e, ord)
              where not coalesce(case when jsonb_typeof(x.e) = 'object'
                                      then (select array_agg(k order by k) from jsonb_object_keys(x.e) as k) = $2 and %s end, false)
              order by x.ord limit 1$q$,
             string_agg(format('jsonb_typeof(x.e -> %L) %s', f.field,
                               case when f.role = 'expect' then format('in (%L, ''null'')', j.type) else format('= %L', j.type) end)
                        || case when f.role = 'version' then format(' and scale((x.e -> %1$L)::numeric) = 0 and (x.e -> %1$L)::numeric >= 0', f.field) else '' end,
                        ' and ' order by f.ord))
           when 'cast' then format('select case when bool_and(%s) then jsonb_agg(jsonb_build_object(%s) order by x.ord) end from jsonb_array_elements($1) with ordinality as x(e, ord)',
             string_agg(case when f.type = format_type(f.typid, null) then 'true'
                             else format('(x.e ->> %1$L)::%2$s = (x.e ->> %1$L)::%3$s::%2$s', f.field, f.typid, f.type) end
                        || case when f.role = 'version' then format(' and (x.e ->> %L)::numeric < %s', f.field,
                                                                      case f.typid when 'smallint'::regtype then '32767'
                                                                                   when 'integer'::regtype then '2147483647'
                                                                                   else '9223372036854775807' end)
                                else '' end, ' and ' order by f.ord),
             string_agg(format('%L, to_jsonb((x.e ->> %L)::%s)', f.field, f.field, f.type), ', ' order by f.ord))
         end
    from change_fields(change_target_list_sql.definition) as f
   cross join lateral (select case f.category when 'N' then 'number' when 'B' then 'boolean' else 'string' end as type) as j
$$;
comment on function {{ .schema }}.change_target_list_sql(jsonb, text) is
  'chunks helper: the statement of change_target_list that checks (PART check) or casts (PART cast) the targets of a campaign of the declared change DEFINITION.';
