-- The functions of one declared change, made from its definition (stored in
-- changes, already validated by define_change): apply_<name> for a job's
-- chunks, its inverse for an undo's, and the read-only check; owned by the
-- schema's owner, for nobody else. define_change calls it for a new change,
-- and every install (chunks migrate) calls it again for every defined
-- change, so the generated code is always this build's generator's (a
-- definition, and so its digest and every approval of it, never changes).
create or replace function {{ .schema }}.generate_change(definition jsonb) returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_def jsonb := generate_change.definition;
  v_name text := v_def ->> 'name';
  v_owner regrole;
  v_function regprocedure;
begin
  select n.nspowner::regrole into v_owner from pg_namespace as n where n.nspname = '{{ .schema }}';
  execute change_function_sql(v_def, false);
  execute change_function_sql(v_def, true);
  execute change_check_sql(v_def);
  for v_function in select p.oid::regprocedure from pg_proc as p
                where p.pronamespace = '{{ .schema }}'::regnamespace and p.proname = 'apply_' || v_name loop
    execute format('alter function %s owner to %s', v_function, v_owner);
    execute format('revoke all on function %s from public', v_function);
  end loop;
  execute format('comment on function %I.%I(text, text, integer, jsonb) is %L', '{{ .schema }}', 'apply_' || v_name,
                 format('chunks: the generated function of change %s (define_change): applies it to the targets of one chunk of a job (run_chunk calls it), writing change_audit. Definition: %s',
                        v_name, v_def::text));
  execute format('comment on function %I.%I(text, text, integer, jsonb, boolean) is %L', '{{ .schema }}', 'apply_' || v_name,
                 format('chunks: the generated inverse of change %s (define_change): restores the before values of the rows of one chunk of an undo (register_undo; run_chunk calls it), version + 1, writing change_audit. Definition: %s',
                        v_name, v_def::text));
  execute format('comment on function %I.%I(text, jsonb) is %L', '{{ .schema }}', 'apply_' || v_name,
                 format('chunks: the generated read-only check of change %s (define_change): judges targets against their rows now, locking nothing (check_change calls it). Definition: %s',
                        v_name, v_def::text));
end
$$;
comment on function {{ .schema }}.generate_change(jsonb) is
$c$chunks helper: (re)creates the generated functions of the declared change DEFINITION (a row of
changes): apply_<name>(job_id, tenant, first_ordinal, targets) for a job's chunks, its inverse
apply_<name>(..., restore) for an undo's, and the read-only check apply_<name>(tenant, targets),
owned by the schema's owner and executable by nobody else. Called by define_change, and by every
install for every defined change.$c$;
