-- One target of a job of a declared change, validated and normalized (for
-- change_targets and campaign_create_change): ITEM must be an object whose
-- fields are exactly the change's (change_fields), each a value of its
-- column's type (a number for a numeric column, a boolean for a boolean
-- one, else a string; only an expect field may be null). Returns it with
-- its values as their columns' types print them (to_jsonb of the typed
-- value). 22023 naming LABEL ("targets[3]", "row 5") and the target field.
create or replace function {{ .schema }}.change_target(definition jsonb, item jsonb, label text) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_target jsonb := '{}'::jsonb;
  v_value jsonb;
  v_f record;
  v_v jsonb;
  v_extra text;
  v_json_type text;
begin
  if jsonb_typeof(change_target.item) <> 'object' then
    raise exception '%: must be an object with the fields %, got %', change_target.label,
      (select string_agg(f.field, ', ' order by f.ord) from change_fields(change_target.definition) as f),
      jsonb_typeof(change_target.item) using errcode = '22023';
  end if;
  select k into v_extra from jsonb_object_keys(change_target.item) as k
   where k <> all (array(select f.field from change_fields(change_target.definition) as f)) order by k limit 1;
  if v_extra is not null then
    raise exception '%: unexpected field %', change_target.label, excerpt(v_extra, true) using errcode = '22023';
  end if;
  for v_f in select * from change_fields(change_target.definition) loop
    if not change_target.item ? v_f.field then
      raise exception '%: missing field %', change_target.label, v_f.field using errcode = '22023';
    end if;
    v_v := change_target.item -> v_f.field;
    if jsonb_typeof(v_v) = 'null' and v_f.role = 'expect' then
      v_target := v_target || jsonb_build_object(v_f.field, v_v);
      continue;
    end if;
    v_json_type := case v_f.category when 'N' then 'number' when 'B' then 'boolean' else 'string' end;
    if jsonb_typeof(v_v) is distinct from v_json_type then
      raise exception '%.%: must be a %, a value of column % (%), got %', change_target.label, v_f.field,
        v_json_type, v_f."column", v_f.type, excerpt(v_v::text, false) using errcode = '22023';
    end if;
    if v_f.role = 'version' and (scale((v_v)::numeric) <> 0 or (v_v)::numeric < 0) then
      raise exception '%.%: must be an integer of at least 0, got %', change_target.label, v_f.field,
        excerpt(v_v::text, false) using errcode = '22023';
    end if;
    if v_f.role = 'version' and (v_v)::numeric >= (case v_f.typid when 'smallint'::regtype then 32767
                                                             when 'integer'::regtype then 2147483647
                                                             else 9223372036854775807 end) then
      raise exception '%.%: % is the largest value column % (%) holds, and a change adds 1 to the version', change_target.label,
        v_f.field, excerpt(v_v::text, false), v_f."column", v_f.type using errcode = '22023';
    end if;
    -- The value as its column's type prints it (a uuid in lower case),
    -- cast as the writer role (writer_cast: a domain's check is code).
    v_value := writer_cast(v_v, v_f.type, v_f.base_id, format('%s.%s:', change_target.label, v_f.field),
                           format('column %s (%s)', v_f."column", v_f.type));
    v_target := v_target || jsonb_build_object(v_f.field, v_value);
  end loop;
  return v_target;
end
$$;
comment on function {{ .schema }}.change_target(jsonb, jsonb, text) is
  'chunks helper: validates ITEM, one target of a job of the declared change DEFINITION (22023 naming LABEL and the target field), and returns it typed as its columns print their values.';
