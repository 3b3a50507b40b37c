-- The targets ITEMS of a declared change (register_change's job,
-- campaign_create_change's campaign), each validated as change_target
-- validates one, typed, and sorted by key, set-based in three statements
-- (change_target_list_sql): 'check' finds whether any target has a
-- problem (exactly the change's fields, each of its JSON type, an integer
-- version); 'verify' casts every value to its column's type as the writer
-- role (a domain's check is code its owner wrote) and says whether one
-- would be rounded or cut, or a version could not grow; 'sort' types each
-- target as its columns' base types print their values and sorts them by
-- key, compared as the key columns' types compare (citext ignoring case,
-- numeric by value). Only when check or verify finds a problem are the
-- targets taken one by one by change_target, so that the first bad one is
-- named (LABELS[i], default targets[i]) in its words.
--
-- SORTED is the typed targets in key order, ORDS each one's place in
-- ITEMS (from 1); DUPLICATE the place (from 1)
-- of the first target whose key an earlier one has, FIRST that earlier
-- one's, WORDS its key in words ("email ann@example.com"; "tenant_id 7,
-- order_no 12"); all three NULL when no key is twice.
drop function if exists {{ .schema }}.change_key_sort(jsonb, jsonb);
-- (before schema version 12 it returned the typed targets unsorted, and
-- before 18 without their places: made again once)
do $$
begin
  if exists (select from pg_proc as p where p.oid = to_regprocedure('{{ .schema }}.change_target_list(jsonb, jsonb, text[])')
                                        and (p.prorettype = 'jsonb'::regtype or not 'ords' = any (p.proargnames))) then
    drop function {{ .schema }}.change_target_list(jsonb, jsonb, text[]);
  end if;
end
$$;
create or replace function {{ .schema }}.change_target_list(definition jsonb, items jsonb, labels text[],
                                                            out sorted jsonb[], out duplicate bigint, out first bigint,
                                                            out words text, out ords integer[])
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
-- (the sort of a campaign's 1,000,000 targets in memory)
set work_mem = '256MB'
as $$
declare
  v_fields text[] := array(select f.field from change_fields(change_target_list.definition) as f order by f.field);
  v_bad bigint;
  v_ok boolean;
  v_first jsonb;
  v_problem text;
begin
  v_problem := change_field_problem(change_target_list.definition);
  if v_problem is not null then
    raise exception 'change %: %', change_target_list.definition ->> 'name', v_problem using errcode = '22023';
  end if;
  -- The fast path: no target has a problem.
  -- (chunks' functions build the statement: fields by %L, types by
  -- format_type; the targets are bound)
  -- @plpgsql_check_options: security_warnings = false
  execute change_target_list_sql(change_target_list.definition, 'check')
    into v_bad using change_target_list.items, v_fields;
  if v_bad is null then
    -- Cast as the writer role. False when a value would be rounded or cut,
    -- or a version cannot grow.
    begin
      v_ok := writer_run(change_target_list_sql(change_target_list.definition, 'verify'), change_target_list.items, null)::boolean;
    exception when data_exception or integrity_constraint_violation or raise_exception then
      v_ok := false;  -- a value that is not one of its column's: the explainer below names it
    end;
  end if;
  if v_bad is not null or not v_ok then
    -- The explainer: the first target with a problem, in change_target's words.
    perform change_target(change_target_list.definition, x.e,
                          coalesce(change_target_list.labels[x.ord], format('targets[%s]', x.ord - 1)))
       from jsonb_array_elements(change_target_list.items) with ordinality as x(e, ord)
      order by x.ord;
    -- (never reached: what the set-based statements refuse, the explainer names)
    raise exception 'targets: a target has a value that is not one of its column''s' using errcode = '22023';
  end if;
  -- @plpgsql_check_options: security_warnings = false
  execute change_target_list_sql(change_target_list.definition, 'sort')
    into sorted, duplicate, ords using change_target_list.items;
  if duplicate is not null then
    -- @plpgsql_check_options: security_warnings = false
    execute change_target_list_sql(change_target_list.definition, 'first')
      into first, v_first using change_target_list.items, duplicate;
    words := (select string_agg(format('%s %s', f.field, v_first ->> f.field), ', ' order by f.ord)
                from change_fields(change_target_list.definition) as f where f.role = 'key');
  end if;
end
$$;
comment on function {{ .schema }}.change_target_list(jsonb, jsonb, text[]) is
  'chunks helper: every target of ITEMS validated (as the writer role) and typed as change_target does one, and sorted by key, set-based unless one has a problem (then one by one, naming the first bad one by LABELS[i], default targets[i]), with each sorted target''s place in ITEMS (ords); with the first key given twice (the places of its second and first targets, and the key in words).';
