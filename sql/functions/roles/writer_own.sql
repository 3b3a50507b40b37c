-- Hands FUNCTION (made by the caller, chunks' owner or the role running
-- migrate) to the writer role: it then runs as the writer. ALTER ... OWNER
-- needs the new owner to hold CREATE on the schema; it holds it only inside
-- this statement's transaction, never where another session could see it.
-- Then every grant on FUNCTION is taken back but the writer's own and
-- chunks' owner's EXECUTE: a default privilege (ALTER DEFAULT PRIVILEGES
-- ... GRANT EXECUTE ON FUNCTIONS) would open it to another role, which
-- could then write the user's table as the writer, with no approval and no
-- audit. Returns the roles whose grants were taken back.
create or replace function {{ .schema }}.writer_own(function regprocedure, writer regrole) returns text[]
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_owner regrole := install_owner();
  v_had_create boolean := has_schema_privilege(writer_own.writer, '{{ .schema }}', 'CREATE');
  v_removed text[];
begin
  if not v_had_create then
    execute format('grant create on schema %I to %s', '{{ .schema }}', writer_own.writer);
  end if;
  execute format('alter function %s owner to %s', writer_own.function, writer_own.writer);
  if not v_had_create then
    execute format('revoke create on schema %I from %s', '{{ .schema }}', writer_own.writer);
  end if;
  v_removed := revoke_foreign_grants(writer_own.function, array[writer_own.writer::oid, v_owner::oid]);
  execute format('grant execute on function %s to %s', writer_own.function, v_owner);
  -- The schema's owner of now, when chunks migrate --owner hands it to
  -- another, loses its grant as part of the handover: not a stray grant.
  return array(select r from unnest(v_removed) as r
                where r is distinct from (select n.nspowner::regrole::text from pg_namespace as n where n.nspname = '{{ .schema }}'));
end
$$;
comment on function {{ .schema }}.writer_own(regprocedure, regrole) is
  'chunks helper: makes WRITER own FUNCTION (CREATE on the schema granted for the ALTER ... OWNER only, in this transaction) and leaves EXECUTE on it to WRITER and the schema''s owner alone; returns the other roles whose grants it took back.';

-- Takes back every grant on FUNCTION but those to the roles KEPT (PUBLIC's
-- included). Returns the roles it took them from.
create or replace function {{ .schema }}.revoke_foreign_grants(function regprocedure, kept oid[]) returns text[]
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_removed text[];
  v_grantee oid;
begin
  -- No ACL at all is the default (EXECUTE for PUBLIC) of a function just
  -- made: taken back, and not worth a word.
  if (select p.proacl is null from pg_proc as p where p.oid = revoke_foreign_grants.function) then
    execute format('revoke all on function %s from public', revoke_foreign_grants.function);
  end if;
  for v_grantee in
    select distinct a.grantee
      from pg_proc as p, aclexplode(p.proacl) as a
     where p.oid = revoke_foreign_grants.function and a.grantee <> all (revoke_foreign_grants.kept)
     order by 1
  loop
    if v_grantee = 0 then
      execute format('revoke all on function %s from public', revoke_foreign_grants.function);
      v_removed := v_removed || 'PUBLIC'::text;
    else
      execute format('revoke all on function %s from %I', revoke_foreign_grants.function, pg_get_userbyid(v_grantee));
      v_removed := v_removed || v_grantee::regrole::text;
    end if;
  end loop;
  return coalesce(v_removed, '{}');
end
$$;
comment on function {{ .schema }}.revoke_foreign_grants(regprocedure, oid[]) is
  'chunks helper: revokes every privilege on FUNCTION from every role but KEPT (PUBLIC included, also when the function had the default ACL); returns the roles whose grants it revoked (not PUBLIC''s default).';

-- Why the writer's function FUNCTION is not as chunks made it, or NULL: it
-- must still be owned by the writer, SECURITY DEFINER, pin writer_config()
-- and be executable by no role but the writer and chunks' owner. A
-- superuser or chunks' owner can alter all of that without changing its
-- body (the writer cannot name it). register (change_named), check and
-- report (writer_run) ask it; a chunk asks it only to say why its function
-- is gone (docs/limits-and-decisions.md "What a chunk checks").
-- A set-returning SQL function of one row at most, with no SET clause and
-- each name qualified, so that the planner inlines it into its caller's FROM.
create or replace function {{ .schema }}.writer_function_problem(function text) returns setof text
language sql stable
as $$
  select case
    when w.writer is null then 'this install has no writer role (chunks migrate --writer ROLE)'
    when p.oid is null then format('function %s is gone', writer_function_problem.function)
    when p.proowner <> w.writer then
      format('function %s belongs to %s, not to the writer %s', p.oid::regprocedure, p.proowner::regrole, w.writer::regrole)
    when not p.prosecdef or p.proconfig is null or not p.proconfig @> wc.config or p.proacl is null
         or exists (select from aclexplode(p.proacl) as a where a.grantee <> w.writer and a.grantee <> n.nspowner) then
      format('function %s was altered (its security, settings or grants)', p.oid::regprocedure)
  end
    from (select to_regrole(quote_ident(cw.role))::oid as writer
            from (values (true)) as one(t) left join {{ .schema }}.change_writer as cw on cw.one) as w
    cross join {{ .schema }}.writer_config() as wc(config)
    left join pg_catalog.pg_proc as p on p.oid = to_regprocedure(writer_function_problem.function)
    left join pg_catalog.pg_namespace as n on n.oid = p.pronamespace
$$;
comment on function {{ .schema }}.writer_function_problem(text) is
  'chunks helper: no row, or one: NULL when FUNCTION (a signature) is as chunks made it for the writer role (owned by it, SECURITY DEFINER, writer_config() pinned, EXECUTE for the writer and the schema''s owner only), else what is wrong (chunks migrate makes it again). Inlined into its caller''s FROM.';

-- Every function of chunks that no role but the owner is meant to execute
-- (all but access_functions('all'), and the writer's own) loses any
-- grant another role holds: a default privilege (ALTER DEFAULT PRIVILEGES
-- ... GRANT EXECUTE ON FUNCTIONS) of the role that ran migrate or
-- define_change, or a grant by hand, would let that role run a helper such
-- as record_job or change_orders directly. Says in a notice what it took
-- back. Run by every install.
create or replace function {{ .schema }}.revoke_stray_grants() returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_owner oid := (select n.nspowner from pg_namespace as n where n.nspname = '{{ .schema }}');
  v_function regprocedure;
  v_removed text[];
begin
  for v_function in
    select p.oid::regprocedure from pg_proc as p
     where p.pronamespace = '{{ .schema }}'::regnamespace and p.proowner = v_owner
       and p.oid not in (select f from access_functions('all') as f)
       and exists (select from aclexplode(p.proacl) as a where a.grantee <> v_owner)
     order by 1::text
  loop
    v_removed := revoke_foreign_grants(v_function, array[v_owner]);
    raise notice 'chunks: took back EXECUTE on %, which only chunks'' own functions call, from %', v_function,
      array_to_string(v_removed, ', ');
  end loop;
end
$$;
comment on function {{ .schema }}.revoke_stray_grants() is
  'chunks helper, run by every install: takes back every grant on a function of chunks that no operator or viewer is meant to execute (all but access_functions(''operator'')), saying in a notice from whom.';
