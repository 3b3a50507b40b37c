-- The targets ITEMS of a campaign of a declared change (campaign_create_change),
-- each validated as change_target validates one and returned the same way,
-- in input order, set-based: one statement finds whether any target has a
-- problem (exactly the change's fields, each of its JSON type, an integer
-- version) and one casts every value to its column's type. Only when one
-- of them finds a problem are the targets taken one by one by change_target,
-- so that the first bad one is named (LABELS[i], default targets[i]) in its words.
create or replace function {{ .schema }}.change_target_list(definition jsonb, items jsonb, labels text[]) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_fields text[];
  v_checks text;
  v_casts text;
  v_bad bigint;
  v_result jsonb;
begin
  select array_agg(f.field order by f.field),
         string_agg(format('jsonb_typeof(x.e -> %L) %s', f.field,
                           case when f.role = 'expect' then format('in (%L, ''null'')', j.type) else format('= %L', j.type) end)
                    || case when f.role = 'version' then format(' and scale((x.e -> %1$L)::numeric) = 0 and (x.e -> %1$L)::numeric >= 0', f.field) else '' end,
                    ' and ' order by f.ord),
         string_agg(format('%L, to_jsonb((x.e ->> %L)::%s)', f.field, f.field, f.typid), ', ' order by f.ord)
    into v_fields, v_checks, v_casts
    from change_fields(change_target_list.definition) as f
   cross join lateral (select case f.category when 'N' then 'number' when 'B' then 'boolean' else 'string' end as type) as j;
  -- The fast path: no target has a problem.
  execute format($q$
    select x.ord from jsonb_array_elements($1) with ordinality as x(e, ord)
     where not coalesce(case when jsonb_typeof(x.e) = 'object'
                             then (select array_agg(k order by k) from jsonb_object_keys(x.e) as k) = $2 and %s end, false)
     order by x.ord limit 1$q$, v_checks)
    into v_bad using change_target_list.items, v_fields;
  if v_bad is null then
    begin
      execute format('select jsonb_agg(jsonb_build_object(%s) order by x.ord) from jsonb_array_elements($1) with ordinality as x(e, ord)', v_casts)
        into v_result using change_target_list.items;
      return v_result;
    exception when others then
      null;  -- a value that is not one of its column: named below
    end;
  end if;
  -- The explainer: the first target with a problem, in change_target's words.
  return (select jsonb_agg(change_target(change_target_list.definition, x.e,
                                         coalesce(change_target_list.labels[x.ord], format('targets[%s]', x.ord - 1))) order by x.ord)
            from jsonb_array_elements(change_target_list.items) with ordinality as x(e, ord));
end
$$;
comment on function {{ .schema }}.change_target_list(jsonb, jsonb, text[]) is
  'chunks helper: every target of ITEMS validated and typed as change_target does one, set-based (two statements) unless one has a problem, then one by one, naming the first bad one by LABELS[i] (default targets[i]).';
