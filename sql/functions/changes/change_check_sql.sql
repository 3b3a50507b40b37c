-- The static read-only check of a declared change (define_change), as SQL
-- text: {{ .schema }}.preview_<name>(tenant, targets), which judges each of TARGETS (a plan's, as
-- change_targets stored them) against its row now, in the words of its
-- chunk's conflict (change_sql_parts: the same CASE), with no row lock:
-- [{"key", "problem"}, ...] in the targets' order, problem NULL when the
-- row would take the change. check_change calls it. Built as
-- change_function_sql builds the change: identifiers by %I, the body one
-- quoted literal, no EXECUTE in it, run as the writer role; for the
-- contract's cancellation (orders_change(), WRITER NULL) it is chunks'
-- owner's orders_preview, run as its caller, in the contract's words.
drop function if exists {{ .schema }}.change_check_sql(jsonb);
create or replace function {{ .schema }}.change_check_sql(definition jsonb, writer text) returns text
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  -- The contract's cancellation (orders_change(), WRITER NULL): chunks'
  -- owner's orders_preview, run as its caller (chunks' functions).
  v_owner constant boolean := change_check_sql.writer is null;
  v_fn text := case when v_owner then 'orders_preview' else (change_function_names(change_check_sql.definition ->> 'name')).preview end;
  v_parts record;
begin
  select * into v_parts
    from change_sql_parts(change_check_sql.definition, format('%I.targets', v_fn), format('%I.tenant', v_fn));
  return format($f$create or replace function {{ .schema }}.%I(tenant text, targets jsonb)
returns jsonb
language plpgsql stable %s
%s
as %L$f$, v_fn, case when v_owner then 'security invoker' else 'security definer' end,
     case when v_owner then 'set search_path = {{ .schema }}, pg_temp' else writer_set_clauses() end, format($b$
begin%6$s
  -- Each target against its row now, in its chunk's words; nothing locked.
  return (with %1$s,
          current as (select %2$s from %3$s as r where %4$s)
          select coalesce(jsonb_agg(jsonb_build_object('key', %7$s, 'problem', %5$s) order by t."?ordinal"), '[]')
            from t left join current as l on %8$s);
end
$b$, v_parts.targets_cte, v_parts.compared, (change_check_sql.definition ->> 'table')::regclass,
     change_key_any_sql(change_check_sql.definition, 'r', 'from t'), v_parts.problem,
     case when v_owner then '' else writer_guard_sql(change_check_sql.writer, null) end, (change_key_sql(change_check_sql.definition, 't')).as_json,
     change_key_equal_sql(change_check_sql.definition, 'l', 't')));
end
$$;
comment on function {{ .schema }}.change_check_sql(jsonb, text) is
  'chunks helper: the CREATE FUNCTION text of the read-only check preview_<name>(tenant, targets) of a validated change DEFINITION (the same CASE as its generated function, no lock), run as the writer role WRITER, for generate_change.';
