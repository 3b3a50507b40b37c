-- The writer role of this install (change_writer), NULL when there is none
-- or it no longer exists.
create or replace function {{ .schema }}.writer_role() returns regrole
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select to_regrole(quote_ident(w.role)) from change_writer as w where w.one
$$;
comment on function {{ .schema }}.writer_role() is
  'chunks helper: the writer role of this install (change_writer), or NULL when none is recorded or it was dropped.';

-- The role that owns, or is about to own, this schema: chunks migrate
-- --owner hands the schema over after installing the functions, and says
-- which role it will be in the setting chunks.owner, so that the writer's
-- functions are made for that owner from the start.
create or replace function {{ .schema }}.install_owner() returns regrole
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select coalesce(to_regrole(nullif(current_setting('chunks.owner', true), '')),
                  (select n.nspowner::regrole from pg_namespace as n where n.nspname = '{{ .schema }}'))
$$;
comment on function {{ .schema }}.install_owner() is
  'chunks helper: the owner of this schema, or the one chunks migrate --owner is handing it to (the setting chunks.owner).';

-- Why ROLE cannot be the writer, or NULL: the writer must hold nothing but
-- what the owners of the user's tables grant it, so that the code attached
-- to those tables gains nothing by running as it.
create or replace function {{ .schema }}.writer_role_problem(role regrole) returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select case
    when r.rolsuper or r.rolcreaterole or r.rolcreatedb or r.rolreplication or r.rolbypassrls then
      format('role %s is a superuser or may create roles or databases, replicate or bypass row security; the writer must be an ordinary NOLOGIN role',
             r.rolname)
    when r.oid = install_owner() or pg_has_role(r.oid, install_owner(), 'MEMBER') then
      format('role %s is, or is a member of, the owner of schema {{ .schema }}', r.rolname)
    when exists (select from pg_auth_members as m where m.member = r.oid) then
      format('role %s is a member of %s; the writer must be a member of no role', r.rolname,
             (select string_agg(m.roleid::regrole::text, ', ' order by m.roleid::regrole::text) from pg_auth_members as m where m.member = r.oid))
    when exists (select from pg_class as c where c.relnamespace = '{{ .schema }}'::regnamespace and c.relowner = r.oid) then
      format('role %s owns a table of schema {{ .schema }}', r.rolname)
  end
    from pg_roles as r
   where r.oid = writer_role_problem.role
$$;
comment on function {{ .schema }}.writer_role_problem(regrole) is
  'chunks helper: why ROLE cannot be the writer of this install (a superuser or a role with CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS; the schema''s owner or a member of it; a member of any role; the owner of a table of chunks), or NULL.';
