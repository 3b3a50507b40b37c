-- The targets of a job of a declared change (register_change), validated
-- and normalized: ITEMS must be a list of 1 to 10,000 (limits()'
-- change_targets_max) objects whose fields are
-- exactly the change's (change_fields), each a value of its column's type
-- (a number for a numeric column, a boolean for a boolean one, else a
-- string; only an expect field may be null), with no key twice. Returns a
-- new list, each target with its values as their columns' types print
-- them (to_jsonb of the typed record), sorted by key. 22023 naming
-- FIELD[i] and the target field at fault.
create or replace function {{ .schema }}.change_targets(definition jsonb, items jsonb, field text) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_list record;
begin
  perform check_target_list(change_targets.items, change_targets.field, limit_of('change_targets_max'));
  -- Every target checked, typed and sorted at once (change_target_list:
  -- one cast of them all as the writer role), or one by one when one has
  -- a problem: the first bad one is the one named. No key twice.
  select * into v_list
    from change_target_list(change_targets.definition, change_targets.items,
                            array(select format('%s[%s]', change_targets.field, g - 1)
                                    from generate_series(1, jsonb_array_length(change_targets.items)) as g));
  if v_list.duplicate is not null then
    raise exception '%: duplicate %', change_targets.field, v_list.words using errcode = '22023';
  end if;
  return to_jsonb(v_list.sorted);
end
$$;
comment on function {{ .schema }}.change_targets(jsonb, jsonb, text) is
  'chunks helper: validates the targets ITEMS of a job of the declared change DEFINITION (22023 naming FIELD[i] and the target field) and returns them typed and sorted by key.';
