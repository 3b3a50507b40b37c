-- The declared change CHANGE (valid_change_plan, campaign_create_change):
-- 22023 naming FIELD when CHANGE is no change's name or there is none;
-- CH409 when its key no longer names one row (change_key_problem), or the
-- function its jobs run is not as chunks made it (writer_function_problem).
create or replace function {{ .schema }}.change_named(change text, field text, out name text,
                                                      out definition jsonb, out digest text)
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_problem text;
  v_function text;
begin
  perform check_change_name(change_named.change, change_named.field);
  select c.name, c.definition, c.digest, c.function_name into name, definition, digest, v_function
    from changes as c where c.name = change_named.change and c.retired_at is null;
  if not found then
    raise exception '%: there is no change % (chunks change list)', change_named.field, change_named.change using errcode = '22023';
  end if;
  -- An approval names rows by their key: it must still name one row each;
  -- the function its jobs run must still be the writer's as chunks made it.
  v_problem := coalesce((select k from change_key_problem(definition) as k),
                        (select f from writer_function_problem(format('%I.%I(text, text, integer, jsonb)', '{{ .schema }}', v_function))
                                         as f),
                        (select format('the writer %s holds privileges on %s, and code on %s would run with them (chunks migrate names the problem)',
                                       w, t, definition ->> 'table')
                           from (select writer_role() as w) as x,
                                lateral writer_foreign_table(x.w, (select c.relowner::regrole from pg_class as c
                                                                    where c.oid = to_regclass(definition ->> 'table'))) as t
                          where t is not null));
  if v_problem is not null then
    raise exception 'change %: %', name, v_problem using errcode = 'CH409';
  end if;
end
$$;
comment on function {{ .schema }}.change_named(text, text) is
  'chunks helper: the declared change CHANGE (name, definition, digest); 22023 naming FIELD when the name is bad or there is no such change; CH409 when its key no longer names one row of its table, or the function its jobs run is not as chunks made it.';
