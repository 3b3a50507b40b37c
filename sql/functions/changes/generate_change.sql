-- The functions of one declared change, made from its definition (stored in
-- changes, already validated by define_change): apply_<name> for a job's
-- chunks, restore_<name>, its inverse, for an undo's, and preview_<name>,
-- the read-only check (change_function_names). Each is owned
-- by the writer role (install_writer) and touches the user's table as it,
-- never as chunks' owner: a trigger, policy or domain check on the table
-- runs with the writer's rights, which hold nothing of chunks (docs/roles.md
-- "Code on your tables"); chunks' owner alone may execute them.
-- define_change calls it for a new change, and every install
-- (install_writer) calls it again for every defined change, so the
-- generated code is always this build's generator's (a definition, and so
-- its digest and every approval of it, never changes). A change that no
-- longer fits its table (change_table_problem) is refused, CH409, naming
-- the change: generation never drops a column of a definition.
-- Schema version 9 made it returning void: dropped once, so that the
-- install can make it again (CREATE OR REPLACE cannot change a return type).
do $$
begin
  if exists (select from pg_proc as p where p.oid = to_regprocedure('{{ .schema }}.generate_change(jsonb)')
                                         and p.prorettype = 'void'::regtype) then
    drop function {{ .schema }}.generate_change(jsonb);
  end if;
end
$$;
create or replace function {{ .schema }}.generate_change(definition jsonb) returns text[]
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_def jsonb := generate_change.definition;
  v_name text := v_def ->> 'name';
  v_writer regrole := writer_role();
  v_problem text;
  v_function regprocedure;
  v_removed text[] := '{}'::text[];
  v_names record;
begin
  select * into v_names from change_function_names(v_name);
  v_problem := change_table_problem(v_def, v_writer);
  if v_problem is not null then
    raise exception 'change %: %', v_name, v_problem using errcode = 'CH409';
  end if;
  -- Made by an older chunks: returning void or jsonb, owned by chunks' owner, or
  -- (before issue 36) the inverse and the check as overloads of
  -- apply_<name>. Dropped, then made anew under their own names.
  -- Before schema version 11 they returned the rows as one jsonb.
  for v_function in select p.oid::regprocedure from pg_proc as p
                     where p.pronamespace = '{{ .schema }}'::regnamespace and p.proname in (v_names.apply, v_names.restore)
                       and (p.proowner <> v_writer or p.prorettype <> 'record'::regtype or p.pronargs <> 4) loop
    execute format('drop function %s', v_function);
  end loop;
  execute change_function_sql(v_def, false, v_writer::text);
  execute change_function_sql(v_def, true, v_writer::text);
  execute change_check_sql(v_def, v_writer::text);
  for v_function in select p.oid::regprocedure from pg_proc as p
                     where p.pronamespace = '{{ .schema }}'::regnamespace and p.proname in (v_names.apply, v_names.restore, v_names.preview) loop
    v_removed := v_removed || writer_own(v_function, v_writer);
  end loop;
  execute format('comment on function %I.%I(text, text, integer, jsonb) is %L', '{{ .schema }}', v_names.apply,
                 format('chunks: the generated function of change %s (define_change), run as the writer role: applies it to the targets of one chunk of a job and returns what it changed, which run_chunk audits. Definition: %s',
                        v_name, v_def::text));
  execute format('comment on function %I.%I(text, text, integer, jsonb) is %L', '{{ .schema }}', v_names.restore,
                 format('chunks: the generated inverse of change %s (define_change), run as the writer role: restores the before values of the rows of one chunk of an undo (register_undo; run_chunk calls it and audits what it returns), version + 1. Definition: %s',
                        v_name, v_def::text));
  execute format('comment on function %I.%I(text, jsonb) is %L', '{{ .schema }}', v_names.preview,
                 format('chunks: the generated read-only check of change %s (define_change), run as the writer role: judges targets against their rows now, locking nothing (check_change calls it). Definition: %s',
                        v_name, v_def::text));
  return v_removed;
end
$$;
comment on function {{ .schema }}.generate_change(jsonb) is
$c$chunks helper: (re)creates the generated functions of the declared change DEFINITION (a row of
changes): apply_<name>(job_id, tenant, first_ordinal, targets) for a job's chunks, its inverse
restore_<name>(job_id, tenant, first_ordinal, targets) for an undo's, and the read-only check
preview_<name>(tenant, targets),
owned by the writer role and executable by the schema's owner alone (writer_own). CH409 naming
the change when it no longer fits its table (change_table_problem). Returns the roles whose
grants on them it took back. Called by define_change, and by every install for every change.$c$;
