-- define_change of a definition as text, the form a file or psql gives
-- (docs/limits-and-decisions.md, "What jsonb cannot show"). jsonb
-- keeps the last of a key given twice, and cannot hold \u0000 at all, so
-- both are checked here, on the text, before it becomes jsonb: each is a
-- 22023 naming where it is. Then define_change(jsonb) checks the rest.
-- A string literal or an untyped parameter comes here; a jsonb value goes
-- to define_change(jsonb), its duplicates already gone.
create or replace function {{ .schema }}.define_change(definition text) returns boolean
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_json json;
  v_detail text;
  v_probe text;
  v_at record;
  v_field text;
  v_key text;
begin
  perform check_change_owner('define_change');
  if define_change.definition is null then
    return define_change(null::jsonb);
  end if;
  begin
    v_json := define_change.definition::json; -- checks the syntax only: it keeps duplicates and \u0000
  exception when invalid_text_representation then
    get stacked diagnostics v_detail = pg_exception_detail;
    raise exception 'definition: is not valid JSON: %', excerpt_error(v_detail, null) using errcode = '22023';
  end;

  -- \u0000. A backslash in JSON text always starts an escape, so once each
  -- \\ is set aside (as chr(1), which valid JSON text never holds), what
  -- reads \u0000 is one. Where: the text read once with U+0001 and once
  -- with U+0002 in its place; the first value or key that differs.
  v_probe := replace(define_change.definition, '\\', chr(1));
  if strpos(v_probe, '\u0000') > 0 then
    with recursive node(path, parent, key, a, b) as (
      select null::text, null::text, null::text, replace(replace(v_probe, '\u0000', '\u0001'), chr(1), '\\')::jsonb,
             replace(replace(v_probe, '\u0000', '\u0002'), chr(1), '\\')::jsonb
      union all
      select c.*
        from node as n
        cross join lateral (
          select coalesce(n.path || '.', '') || e.key, coalesce(n.path, 'definition'), e.key, e.value, n.b -> e.key
            from jsonb_each(case when jsonb_typeof(n.a) = 'object' and jsonb_typeof(n.b) = 'object' then n.a else '{}' end) as e
          union all
          select coalesce(n.path, 'definition') || '[' || (e.i - 1) || ']', null, null, e.value, n.b -> (e.i - 1)::integer
            from jsonb_array_elements(case when jsonb_typeof(n.a) = 'array' and jsonb_typeof(n.b) = 'array' then n.a else '[]' end)
                 with ordinality as e(value, i)
        ) as c
       where n.a is distinct from n.b
    )
    select n.path, n.parent, n.key, n.b is null as is_key into v_at
      from node as n
     where n.a is distinct from n.b and (n.b is null or jsonb_typeof(n.a) not in ('object', 'array'))
     order by n.path nulls first
     limit 1;
    if v_at.is_key then
      raise exception '%: key % must not contain \u0000 (PostgreSQL text cannot store it)', excerpt(v_at.parent, false),
        replace(excerpt(v_at.key, true), '\u0001', '\u0000') using errcode = '22023';
    end if;
    raise exception '%: must not contain \u0000 (PostgreSQL text cannot store it)', excerpt(coalesce(v_at.path, 'definition'), false)
      using errcode = '22023';
  end if;

  -- A key twice: json, unlike jsonb, keeps both. The definition and its
  -- when, set and set_from_target are all the objects a definition has
  -- (any deeper one is refused as a value by define_change(jsonb)).
  if json_typeof(v_json) = 'object' then
    foreach v_field in array array['definition', 'when', 'set', 'set_from_target'] loop
      if v_field = 'definition' or json_typeof(v_json -> v_field) = 'object' then
        select k into v_key
          from json_object_keys(case when v_field = 'definition' then v_json else v_json -> v_field end) as k
         group by k having count(*) > 1 order by k limit 1;
        if found then
          raise exception '%: duplicate key %', v_field, excerpt(v_key, true) using errcode = '22023';
        end if;
      end if;
    end loop;
  end if;
  return define_change(v_json::jsonb);
end
$$;
comment on function {{ .schema }}.define_change(text) is
$c$define_change of DEFINITION given as JSON text (a file, a psql literal, an untyped parameter):
refuses, with 22023 naming where, what jsonb would hide or cannot hold: a key given twice in the
definition or in its when, set or set_from_target (jsonb keeps the last), and \u0000 (jsonb
refuses it with a raw 22P05); text that is not JSON is a 22023 too. Then it is define_change(jsonb):
true when new, false when the same definition is already there; 42501 for anyone but the schema's
owner; CH409 another definition under this name.$c$;
