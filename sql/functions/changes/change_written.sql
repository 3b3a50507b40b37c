-- The columns a declared change writes, in the order of its generated
-- update and its audit: each set column, then each set_from_target
-- column (both by name), then each set_now column as listed. DEFINITION
-- was validated by define_change.
create or replace function {{ .schema }}.change_written(definition jsonb) returns text[]
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select array(select k from jsonb_object_keys(coalesce(definition -> 'set', '{}')) as k order by k)
         || array(select k from jsonb_object_keys(coalesce(definition -> 'set_from_target', '{}')) as k order by k)
         || array(select e from jsonb_array_elements_text(coalesce(definition -> 'set_now', '[]')) with ordinality as x(e, o) order by o)
$$;
comment on function {{ .schema }}.change_written(jsonb) is
  'chunks helper: the columns the declared change DEFINITION writes: set, then set_from_target (each by name), then set_now (as listed).';
