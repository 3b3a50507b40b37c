-- Least privilege (README "Roles"): the functions each kind of access may
-- call, in one place. A viewer reads; an operator does everything chunks
-- does, a viewer's reading included; an approver reads, checks plans, and
-- approves what another role proposed (two people). None may write a
-- table: every function here is SECURITY DEFINER and writes as the owner.
create or replace function {{ .schema }}.access_functions(access text) returns setof regprocedure
language sql stable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select f::regprocedure
    from unnest(array[
           '{{ .schema }}.inspect_job(text)', '{{ .schema }}.report(text)', '{{ .schema }}.job_lineage(text)',
           '{{ .schema }}.inspect_job(text, text)', '{{ .schema }}.report(text, text)', '{{ .schema }}.job_lineage(text, text)',
           '{{ .schema }}.job_status()', '{{ .schema }}.status_page(text, integer)', '{{ .schema }}.worker_status()',
           '{{ .schema }}.campaign_status(text)', '{{ .schema }}.campaign_report(text)', '{{ .schema }}.queue_channel()',
           '{{ .schema }}.change_list()', '{{ .schema }}.change_show(text)', '{{ .schema }}.installed_version()',
           '{{ .schema }}.verify_job(text)', '{{ .schema }}.verify_campaign(text)',
           '{{ .schema }}.job_proposals(text)', '{{ .schema }}.policy_list()'
         ]) as f
   where access in ('viewer', 'operator', 'approver', 'all')
  union all
  -- read-only checks, for the proposer and the reviewer alike
  select f::regprocedure
    from unnest(array[
           '{{ .schema }}.check_plan(jsonb)', '{{ .schema }}.check_change(text, jsonb)', '{{ .schema }}.plan_digest(text, jsonb)',
           '{{ .schema }}.campaign_check(text, integer)'
         ]) as f
   where access in ('operator', 'approver', 'all')
  union all
  select f::regprocedure
    from unnest(array['{{ .schema }}.approve(text, text, text)', '{{ .schema }}.campaign_approve(text, text, text)']) as f
   where access in ('approver', 'all')
  union all
  select f::regprocedure
    from unnest(array[
           '{{ .schema }}.register(jsonb)', '{{ .schema }}.register_change(text, jsonb)',
           '{{ .schema }}.cancel_chunk(text, jsonb)', '{{ .schema }}.run_chunk(text)',
           '{{ .schema }}.run_next_chunk(text, integer, integer, integer, text, boolean)',
           '{{ .schema }}.pause_job(text)', '{{ .schema }}.pause_job_after(text, integer)', '{{ .schema }}.resume_job(text)', '{{ .schema }}.abandon_job(text, text)',
           '{{ .schema }}.skip_target(text, jsonb, text)', '{{ .schema }}.register_undo(text, text)',
           '{{ .schema }}.run_chunk(text, text)', '{{ .schema }}.pause_job(text, text)',
           '{{ .schema }}.pause_job_after(text, text, integer)', '{{ .schema }}.resume_job(text, text)',
           '{{ .schema }}.abandon_job(text, text, text)', '{{ .schema }}.skip_target(text, text, jsonb, text)',
           '{{ .schema }}.register_undo(text, text, text)',
           '{{ .schema }}.worker_heartbeat(text, text, integer, timestamptz, bigint, text, text)',
           '{{ .schema }}.worker_gone(text)', '{{ .schema }}.record_progress(jsonb)',
           '{{ .schema }}.campaign_create(text, text, integer, integer[], integer[], integer[], integer)',
           '{{ .schema }}.campaign_create_change(text, text, text, integer, jsonb, text[], integer, text[])',
           '{{ .schema }}.campaign_pause(text)',
           '{{ .schema }}.campaign_resume(text)', '{{ .schema }}.campaign_undo(text, text)',
           '{{ .schema }}.campaign_skip(text, text)', '{{ .schema }}.campaign_archive(text)', '{{ .schema }}.archive_jobs(interval)'
         ]) as f
   where access in ('operator', 'all')
$$;
comment on function {{ .schema }}.access_functions(text) is
  'chunks helper: the functions that ACCESS (viewer: the ones that read; operator: those and every one that changes something; approver: a viewer''s, the read-only checks of a plan and approve, campaign_approve; all: every function any role may be granted, each once) may execute.';

-- The tables chunks keeps, which both kinds of access may read (orders is
-- the application's: neither needs any privilege on it).
create or replace function {{ .schema }}.access_tables() returns setof regclass
language sql stable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select t::regclass
    from unnest(array['{{ .schema }}.jobs', '{{ .schema }}.job_audit', '{{ .schema }}.job_approval', '{{ .schema }}.job_kind',
                      '{{ .schema }}.job_queue', '{{ .schema }}.job_progress', '{{ .schema }}.workers',
                      '{{ .schema }}.campaigns', '{{ .schema }}.campaign_jobs', '{{ .schema }}.campaign_progress', '{{ .schema }}.job_ends',
                      '{{ .schema }}.job_skips', '{{ .schema }}.job_archive', '{{ .schema }}.approval_policy', '{{ .schema }}.proposals',
                      '{{ .schema }}.changes', '{{ .schema }}.job_change', '{{ .schema }}.change_audit',
                      '{{ .schema }}.change_jobs', '{{ .schema }}.change_targets', '{{ .schema }}.change_chunks']) as t
$$;
comment on function {{ .schema }}.access_tables() is
  'chunks helper: the tables of chunks (not orders) that a viewer or an operator may read.';

create or replace function {{ .schema }}.grant_access(role text, access text, revoke boolean default false) returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_role regrole;
  v_owns text;
  v_fn regprocedure;
  v_table regclass;
  v_functions jsonb := '[]'::jsonb;
  v_tables jsonb := '[]'::jsonb;
begin
  if grant_access.access is null or grant_access.access not in ('operator', 'viewer', 'approver') then
    raise exception 'access: must be operator, viewer or approver, got %', coalesce(grant_access.access, 'null') using errcode = '22023';
  end if;
  -- The name exactly as pg_roles spells it (not folded to lower case).
  select r.oid::regrole into v_role from pg_roles as r where r.rolname = grant_access.role;
  if v_role is null then
    raise exception 'role: there is no role %; create it first (CREATE ROLE)', excerpt(grant_access.role, true)
      using errcode = '22023';
  end if;
  if grant_access.revoke is null then
    raise exception 'revoke: must be true or false, got null' using errcode = '22023';
  end if;
  -- The owner's privileges are what the SECURITY DEFINER functions run
  -- with: revoking them would break chunks for every role, and granting
  -- them adds nothing.
  select case
           when exists (select from pg_namespace as n where n.nspname = '{{ .schema }}' and n.nspowner = v_role)
             then 'schema {{ .schema }}'
           when exists (select from access_functions('operator') as f join pg_proc as p on p.oid = f where p.proowner = v_role)
             then 'the functions of schema {{ .schema }}'
         end
    into v_owns;
  if v_owns is not null then
    raise exception 'role: % owns %, and every chunks function runs with its privileges: grant neither gives nor takes them (chunks migrate restores any it lost); name another role',
      excerpt(grant_access.role, true), v_owns using errcode = '22023';
  end if;

  if not grant_access.revoke then
    execute format('grant usage on schema %I to %s', '{{ .schema }}', v_role);
    for v_table in select access_tables() loop
      execute format('grant select on table %s to %s', v_table, v_role);
      v_tables := v_tables || to_jsonb(v_table::text);
    end loop;
    for v_fn in select access_functions(grant_access.access) loop
      execute format('grant execute on function %s to %s', v_fn, v_role);
      v_functions := v_functions || to_jsonb(v_fn::text);
    end loop;
  elsif grant_access.access in ('operator', 'approver') then
    -- Levels: an operator or approver that loses it stays a viewer (and
    -- keeps what the other of the two, when it holds it, needs).
    for v_fn in select x.f from (select access_functions(grant_access.access) as f
                                 except select access_functions('viewer')
                                 except select access_functions(o.other)
                                          from (select case grant_access.access when 'operator' then 'approver' else 'operator' end as other) as o
                                         where has_function_privilege(v_role, case o.other when 'operator' then '{{ .schema }}.run_chunk(text)'
                                                                                          else '{{ .schema }}.approve(text, text, text)' end, 'execute')) as x
                 order by x.f::text loop  -- a stable order: except hashes
      execute format('revoke execute on function %s from %s', v_fn, v_role);
      v_functions := v_functions || to_jsonb(v_fn::text);
    end loop;
  else
    -- A role that is no viewer is no operator or approver either: everything goes.
    for v_fn in select y.f from (select distinct x.f from access_functions('all') as x(f)) as y order by y.f::text loop
      execute format('revoke execute on function %s from %s', v_fn, v_role);
      v_functions := v_functions || to_jsonb(v_fn::text);
    end loop;
    for v_table in select access_tables() loop
      execute format('revoke select on table %s from %s', v_table, v_role);
      v_tables := v_tables || to_jsonb(v_table::text);
    end loop;
    execute format('revoke usage on schema %I from %s', '{{ .schema }}', v_role);
  end if;
  return jsonb_build_object('role', grant_access.role, 'access', grant_access.access, 'revoked', grant_access.revoke,
                            'functions', v_functions, 'tables', v_tables);
end
$$;
comment on function {{ .schema }}.grant_access(text, text, boolean) is
$c$Grants ROLE the privileges of ACCESS on this schema, or with REVOKE takes them back (chunks grant).
viewer: USAGE on the schema, SELECT on the tables of chunks (access_tables(); not orders) and
EXECUTE on the functions that read (access_functions('viewer')); operator: those and EXECUTE on
every function that changes something (access_functions('operator')); approver (two people): a
viewer's, the read-only checks of a plan, and approve and campaign_approve. Every one of those
functions is SECURITY DEFINER, so none needs a privilege on orders or may write any table.
Levels: revoking operator or approver leaves a viewer (with what the other, when held, needs);
revoking viewer takes everything, the schema's USAGE included. Run it as the owner of the schema (or a superuser): it is SECURITY INVOKER, and
GRANT needs the grant option. Returns {"role" (the name as pg_roles spells it, unquoted), "access", "revoked", "functions",
"tables"}. Errors: 22023 bad ACCESS or REVOKE, no such ROLE, or a ROLE that owns the schema or its
functions (their privileges are what every function runs with; migrate restores any it lost).$c$;

-- An upgrade gives every role that holds a level what its level holds
-- now: a table or function added since (a new migration's table, a new
-- operation) reaches the viewers and operators granted before it, with no
-- second chunks grant. A role that may read jobs is a viewer, one that may
-- execute run_chunk(text) an operator, whoever granted it. Nothing is
-- revoked here (chunks grant --revoke does that).
create or replace function {{ .schema }}.regrant_access() returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_role regrole;
  v_access text;
  v_table regclass;
  v_fn regprocedure;
begin
  for v_role, v_access in
    select distinct a.grantee::regrole, l.access
      from pg_class as c, aclexplode(c.relacl) as a
     cross join lateral (values ('viewer'),
                                (case when has_function_privilege(a.grantee, '{{ .schema }}.run_chunk(text)', 'execute') then 'operator' end),
                                (case when has_function_privilege(a.grantee, '{{ .schema }}.approve(text, text, text)', 'execute') then 'approver' end)) as l(access)
     where c.oid = '{{ .schema }}.jobs'::regclass and a.privilege_type = 'SELECT'
       and a.grantee <> c.relowner and a.grantee <> 0 and l.access is not null
  loop
    for v_table in select access_tables() loop
      execute format('grant select on table %s to %s', v_table, v_role);
    end loop;
    for v_fn in select access_functions(v_access) loop
      execute format('grant execute on function %s to %s', v_fn, v_role);
    end loop;
  end loop;
end
$$;
comment on function {{ .schema }}.regrant_access() is
  'chunks helper, run by every install: grants every role that may read jobs (a viewer; an operator when it may execute run_chunk(text); an approver when it may execute approve(text, text, text)) the tables and functions its levels hold now, so an upgrade''s new ones reach roles granted before it.';
