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
  v_fields text[] := array(select f.field from change_fields(change_target_list.definition) as f order by f.field);
  v_bad bigint;
  v_result jsonb;
begin
  -- The fast path: no target has a problem.
  execute change_target_list_sql(change_target_list.definition, 'check')
    into v_bad using change_target_list.items, v_fields;
  if v_bad is null then
    -- Cast as the writer role (a domain's check is code its owner wrote).
    -- NULL when a value would be rounded or cut, or a version cannot grow.
    begin
      v_result := writer_run(change_target_list_sql(change_target_list.definition, 'cast'), change_target_list.items, null);
      if v_result is not null then
        return v_result;
      end if;
    exception when data_exception or integrity_constraint_violation or raise_exception then
      null;  -- a value that is not one of its column's: the explainer below names it
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
