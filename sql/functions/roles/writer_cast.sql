-- VALUE (a JSON string, number or boolean) as a value of TYPE (format_type's
-- text, typmod included), printed by to_jsonb: cast as the writer role
-- (writer_run), since a domain's check is code its owner wrote, under the
-- writer's pinned TimeZone and DateStyle, so the same text means the same
-- value in every session. Refused (22023, naming WHAT): a value that is not
-- one of TYPE (OF names the column), and one that TYPE's modifier would change (1.005 for
-- numeric(5,2), 'abcd' for varchar(3)), which a cast would silently round
-- or cut.
create or replace function {{ .schema }}.writer_cast(value jsonb, type text, base regtype, what text, of text) returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_result jsonb;
begin
  begin
    -- With a modifier (numeric(5,2), varchar(3)), the value must equal
    -- itself cast with it; the same value written otherwise (20 and
    -- 20.00) is no change.
    v_result := writer_run(format($q$select jsonb_build_array(to_jsonb(($1 #>> '{}')::%1$s), %3$s, ($1 #>> '{}')::%1$s::text)$q$,
                                  writer_cast.type, writer_cast.base,
                                  case when writer_cast.type = format_type(writer_cast.base, null) then 'true'
                                       else format($q$($1 #>> '{}')::%2$s = ($1 #>> '{}')::%1$s::%2$s$q$, writer_cast.type, writer_cast.base) end),
                           writer_cast.value, null);
  exception when data_exception or integrity_constraint_violation or raise_exception or check_violation then
    raise exception '% % is not a value of %: %', writer_cast.what, excerpt(writer_cast.value::text, false), writer_cast.of,
      excerpt_error(sqlerrm, writer_cast.value #>> '{}') using errcode = '22023';
  end;
  if (v_result -> 1) is distinct from 'true'::jsonb then
    raise exception '% % would be stored as % in % (rounded or cut); give the value exactly', writer_cast.what,
      excerpt(writer_cast.value::text, false), excerpt(v_result ->> 2, false), writer_cast.of using errcode = '22023';
  end if;
  return v_result -> 0;
end
$$;
comment on function {{ .schema }}.writer_cast(jsonb, text, regtype, text, text) is
  'chunks helper: VALUE as a value of TYPE (typmod included; BASE without it), cast as the writer role and printed by to_jsonb; 22023 naming WHAT when it is not one, or when TYPE''s modifier would round or cut it (OF says whose value it is).';
