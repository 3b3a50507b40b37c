-- The writer role of this install (docs/roles.md "Code on your tables"),
-- and every function it owns, made again: chunks migrate calls it last.
-- The role is the one chunks migrate --writer names (the setting
-- chunks.writer), else the one recorded in change_writer, else
-- <schema>_writer, which is created (NOLOGIN, nothing granted) when the
-- role running migrate may create roles. It must hold nothing of chunks
-- (writer_role_problem); its privileges on chunks' schema and tables are
-- taken back, and the schema's owner becomes a member of it so that
-- define_change can hand it the functions it makes. Then writer_exec and
-- every declared change's functions are made again (generate_change); a
-- change that no longer fits its table keeps no function, and migrate
-- says why (its jobs are refused until it is fixed), without failing the
-- rest. Says what it did in notices that start "chunks: ".
create or replace function {{ .schema }}.install_writer() returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_requested text := nullif(current_setting('chunks.writer', true), '');
  v_name text;
  v_writer regrole;
  v_owner regrole := install_owner();
  v_problem text;
  v_removed text[];
  v_change record;
begin
  v_name := coalesce(v_requested, (select w.role from change_writer as w), left('{{ .schema }}', 56) || '_writer');
  if not exists (select from pg_roles as r where r.rolname = v_name) then
    if v_requested is not null then
      raise exception 'writer: there is no role %; create it first (CREATE ROLE % NOLOGIN)', excerpt(v_name, true),
        quote_ident(v_name) using errcode = '22023';
    end if;
    if not exists (select from pg_roles as r where r.rolname = current_user and (r.rolsuper or r.rolcreaterole)) then
      perform drop_change_functions(c.function_name) from changes as c where c.retired_at is null;
      raise notice 'chunks: declared changes need a writer role, and % may not create one: a role that may runs chunks migrate, or chunks migrate --writer ROLE names a NOLOGIN role made for it%',
        current_user, coalesce(' (changes ' || (select string_agg(c.name, ', ' order by c.name) from changes as c) || ' cannot run until then)', '');
      return;
    end if;
    execute format('create role %I nologin', v_name);
    raise notice 'chunks: created role % (NOLOGIN), the writer: the owner of each table of a declared change grants it SELECT and UPDATE', quote_ident(v_name);
  end if;
  v_writer := quote_ident(v_name)::regrole;
  v_problem := writer_role_problem(v_writer);
  if v_problem is not null then
    raise exception 'writer: %', v_problem using errcode = '22023';
  end if;
  if not pg_has_role(v_owner, v_writer, 'MEMBER') and not (select r.rolsuper from pg_roles as r where r.oid = v_owner) then
    execute format('grant %s to %s', v_writer, v_owner);
  end if;
  -- Nothing of chunks for the writer: not the schema, no table, no sequence.
  execute format('revoke all on schema %I from %s', '{{ .schema }}', v_writer);
  execute format('revoke all on all tables in schema %I from %s', '{{ .schema }}', v_writer);
  execute format('revoke all on all sequences in schema %I from %s', '{{ .schema }}', v_writer);
  insert into change_writer as w (role) values (v_name)
  on conflict (one) do update set role = excluded.role, recorded_at = now(), recorded_by = session_user
   where w.role is distinct from excluded.role;

  execute writer_exec_sql(v_name);
  comment on function writer_exec(text, jsonb, jsonb) is
    'chunks: the writer role''s one dynamic function (install_writer made it): runs STATEMENT with $1 A and $2 B as the writer and returns its jsonb value; writer_run calls it, for every read of a user''s table and every cast to one of its columns'' types outside a chunk. Executable by the writer and the schema''s owner alone.';
  v_removed := writer_own('{{ .schema }}.writer_exec(text, jsonb, jsonb)'::regprocedure, v_writer);
  if cardinality(v_removed) > 0 then
    raise notice 'chunks: took back EXECUTE on writer_exec from %', array_to_string(v_removed, ', ');
  end if;
  for v_change in select c.name, c.definition, c.function_name from changes as c where c.retired_at is null order by c.name loop
    begin
      v_removed := generate_change(v_change.definition);
      if cardinality(v_removed) > 0 then
        raise notice 'chunks: took back EXECUTE on the functions of change % from %', v_change.name, array_to_string(v_removed, ', ');
      end if;
    exception when others then
      perform drop_change_functions(v_change.function_name);
      raise notice 'chunks: change % no longer fits its table, so it has no function and its jobs are refused until it is fixed (chunks change show %): %',
        v_change.name, v_change.name, excerpt_error(sqlerrm, null);
    end;
  end loop;
end
$$;
comment on function {{ .schema }}.install_writer() is
$c$chunks helper, run by chunks migrate: records the writer role (the setting chunks.writer, else
the recorded one, else <schema>_writer, created NOLOGIN when the caller may create roles),
refuses one that holds anything (writer_role_problem), makes the schema's owner a member of it,
takes back its privileges on chunks' schema, and makes writer_exec and every declared change's
functions again, as the writer's; a change that no longer fits its table is left without
functions, named in a notice.$c$;

-- Drops every generated function of a declared change, whoever owns them:
-- FUNCTION_NAME (changes.function_name, apply_<name>: the change),
-- restore_<name> (its inverse) and preview_<name> (its read-only check).
-- Before issue 36 the inverse and the check were overloads of
-- apply_<name>: those go too.
create or replace function {{ .schema }}.drop_change_functions(function_name text) returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_function regprocedure;
begin
  for v_function in select p.oid::regprocedure
                       from change_function_names(substr(drop_change_functions.function_name, length('apply_') + 1)) as f,
                            pg_proc as p
                      where p.pronamespace = '{{ .schema }}'::regnamespace and p.proname in (f.apply, f.restore, f.preview) loop
    execute format('drop function %s', v_function);
  end loop;
end
$$;
comment on function {{ .schema }}.drop_change_functions(text) is
  'chunks helper: drops the generated functions of the declared change whose function is FUNCTION_NAME (apply_<name>, restore_<name>, preview_<name>).';
