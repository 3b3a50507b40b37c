-- The targets of a job of a declared change (register_change), validated
-- and normalized: ITEMS must be a list of 1 to 64 objects whose fields are
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
  v_fields text[];
  v_key_type regtype;
  v_target jsonb;
  v_value jsonb;
  v_unsorted jsonb := '[]'::jsonb;
  v_e jsonb;
  v_i bigint;
  v_f record;
  v_v jsonb;
  v_extra text;
  v_json_type text;
  v_result jsonb;
  v_duplicate text;
begin
  perform check_target_list(change_targets.items, change_targets.field);
  select array_agg(f.field order by f.ord), (array_agg(f.typid order by f.ord))[1]
    into v_fields, v_key_type
    from change_fields(change_targets.definition) as f;
  for v_e, v_i in select t.e, t.ord - 1 from jsonb_array_elements(change_targets.items) with ordinality as t(e, ord) loop
    v_target := '{}'::jsonb;
    if jsonb_typeof(v_e) <> 'object' then
      raise exception '%[%]: must be an object with the fields %, got %', change_targets.field, v_i,
        array_to_string(v_fields, ', '), jsonb_typeof(v_e) using errcode = '22023';
    end if;
    select k into v_extra from jsonb_object_keys(v_e) as k where k <> all (v_fields) order by k limit 1;
    if v_extra is not null then
      raise exception '%[%]: unexpected field %', change_targets.field, v_i, excerpt(v_extra, true) using errcode = '22023';
    end if;
    for v_f in select * from change_fields(change_targets.definition) loop
      if not v_e ? v_f.field then
        raise exception '%[%]: missing field %', change_targets.field, v_i, v_f.field using errcode = '22023';
      end if;
      v_v := v_e -> v_f.field;
      if jsonb_typeof(v_v) = 'null' and v_f.role = 'expect' then
        v_target := v_target || jsonb_build_object(v_f.field, v_v);
        continue;
      end if;
      v_json_type := case v_f.category when 'N' then 'number' when 'B' then 'boolean' else 'string' end;
      if jsonb_typeof(v_v) is distinct from v_json_type then
        raise exception '%[%].%: must be a %, a value of column % (%), got %', change_targets.field, v_i, v_f.field,
          v_json_type, v_f."column", v_f.type, excerpt(v_v::text, false) using errcode = '22023';
      end if;
      if v_f.role = 'version' and (scale((v_v)::numeric) <> 0 or (v_v)::numeric < 0) then
        raise exception '%[%].%: must be an integer of at least 0, got %', change_targets.field, v_i, v_f.field,
          excerpt(v_v::text, false) using errcode = '22023';
      end if;
      begin
        -- The value as its column's type prints it (a uuid in lower case).
        execute format('select to_jsonb($1::%s)', v_f.typid) into v_value using v_v #>> '{}';
      exception when others then
        raise exception '%[%].%: % is not a value of column % (%): %', change_targets.field, v_i, v_f.field,
          excerpt(v_v::text, false), v_f."column", v_f.type, sqlerrm using errcode = '22023';
      end;
      v_target := v_target || jsonb_build_object(v_f.field, v_value);
    end loop;
    v_unsorted := v_unsorted || jsonb_build_array(v_target);
  end loop;
  -- No key twice, and sorted by key, compared as the key column's type.
  execute format('select d.k::text from (select (o ->> $2)::%s as k from jsonb_array_elements($1) as o) as d
                   group by d.k having count(*) > 1 order by d.k limit 1', v_key_type)
    into v_duplicate using v_unsorted, v_fields[1];
  if v_duplicate is not null then
    raise exception '%: duplicate % %', change_targets.field, v_fields[1], v_duplicate using errcode = '22023';
  end if;
  execute format('select jsonb_agg(o order by (o ->> $2)::%s) from jsonb_array_elements($1) as o', v_key_type)
    into v_result using v_unsorted, v_fields[1];
  return v_result;
end
$$;
comment on function {{ .schema }}.change_targets(jsonb, jsonb, text) is
  'chunks helper: validates the targets ITEMS of a job of the declared change DEFINITION (22023 naming FIELD[i] and the target field) and returns them typed and sorted by key.';
