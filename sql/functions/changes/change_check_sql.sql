-- The static read-only check of a declared change (define_change), as SQL
-- text: {{ .schema }}.preview_<name>(tenant, targets), which judges each of TARGETS (a plan's, as
-- change_targets stored them) against its row now, in the words of its
-- chunk's conflict (change_sql_parts: the same CASE), with no row lock:
-- [{"key", "problem"}, ...] in the targets' order, problem NULL when the
-- row would take the change; an undo's targets (campaign_check of an undo
-- campaign) are judged as its inverse would judge them. change_judge calls
-- it. Built as
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
  v_def constant jsonb := change_check_sql.definition;
  -- The contract's cancellation (orders_change(), WRITER NULL): chunks'
  -- owner's <name>_preview (orders_preview; its undo's, orders_undo_preview,
  -- from the definition with when and set swapped), run as its caller.
  v_owner constant boolean := change_check_sql.writer is null;
  v_fn text := case when v_owner then (v_def ->> 'name') || '_preview' else (change_function_names(v_def ->> 'name')).preview end;
  v_parts record;
  v_undo record;
  v_select constant text := $s$(with %1$s,
          current as (select %2$s from %3$s as r where %4$s)
          select coalesce(jsonb_agg(jsonb_build_object('key', %6$s, 'problem', %5$s) order by t."?ordinal"), '[]')
            from t left join current as l on %7$s)$s$;
  v_undo_branch text := '';
begin
  select * into v_parts from change_sql_parts(v_def, format('%I.targets', v_fn), format('%I.tenant', v_fn));
  -- A declared change's undo jobs have targets of their own shape (the
  -- key, the version, "?after", "?before"): judged as its inverse,
  -- restore_<name>, would judge them, in its words.
  if not v_owner then
    select * into v_undo
      from change_restore_parts(v_def, format('%I.targets', v_fn), format('%I.tenant', v_fn), change_written(v_def));
    v_undo_branch := format(E'\n  if jsonb_typeof(%1$I.targets -> 0) = %2$L and (%1$I.targets -> 0) ? %3$L then\n    return %4$s;\n  end if;',
                            v_fn, 'object', '?after',
                            format(v_select, v_undo.targets_cte, v_undo.compared, (v_def ->> 'table')::regclass,
                                   change_key_any_sql(v_def, 'r', 'from t'), v_undo.problem, (change_key_sql(v_def, 't')).as_json,
                                   change_key_equal_sql(v_def, 'l', 't')));
  end if;
  return format($f$create or replace function {{ .schema }}.%I(tenant text, targets jsonb)
returns jsonb
language plpgsql stable %s
%s
as %L$f$, v_fn, case when v_owner then 'security invoker' else 'security definer' end,
     case when v_owner then 'set search_path = {{ .schema }}, pg_temp' else writer_set_clauses() end, format($b$
begin%s
  -- Each target against its row now, in its chunk's words; nothing locked.%s
  return %s;
end
$b$, case when v_owner then '' else writer_guard_sql(change_check_sql.writer, null) end, v_undo_branch,
     format(v_select, v_parts.targets_cte, v_parts.compared, (v_def ->> 'table')::regclass,
            change_key_any_sql(v_def, 'r', 'from t'), v_parts.problem, (change_key_sql(v_def, 't')).as_json,
            change_key_equal_sql(v_def, 'l', 't'))));
end
$$;
comment on function {{ .schema }}.change_check_sql(jsonb, text) is
  'chunks helper: the CREATE FUNCTION text of the read-only check preview_<name>(tenant, targets) of a validated change DEFINITION (the same CASE as its generated function, or for an undo''s targets its inverse''s; no lock), run as the writer role WRITER, for generate_change; WRITER NULL: chunks'' owner''s <name>_preview for the contract''s cancellation.';
