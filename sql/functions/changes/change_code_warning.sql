-- The functions of the triggers and row security policies of table REL
-- that pin no search_path of their own, or NULL: they run with the
-- writer's (pg_catalog, pg_temp), so an unqualified name in them finds
-- nothing of their schema. define_change and check_change say so in a
-- notice (docs/roles.md "Code on your tables").
create or replace function {{ .schema }}.change_code_warning(rel regclass) returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select format('chunks: %s runs %s, which %s no search_path of its own: they run as the writer with search_path pg_catalog, pg_temp (ALTER FUNCTION ... SET search_path = ...)',
                change_code_warning.rel, string_agg(f.oid::regprocedure::text, ', ' order by f.oid::regprocedure::text),
                case when count(*) = 1 then 'has' else 'have' end)
    from pg_proc as f
   where f.oid in (select t.tgfoid from pg_trigger as t where t.tgrelid = change_code_warning.rel and not t.tgisinternal
                   union
                   select d.refobjid from pg_policy as p join pg_depend as d on d.classid = 'pg_policy'::regclass and d.objid = p.oid
                    where p.polrelid = change_code_warning.rel and d.refclassid = 'pg_proc'::regclass)
     and f.pronamespace <> 'pg_catalog'::regnamespace
     and not exists (select from unnest(f.proconfig) as c where c like 'search\_path=%')
  having count(*) > 0
$$;
comment on function {{ .schema }}.change_code_warning(regclass) is
  'chunks helper: a warning naming the trigger and policy functions of table REL that pin no search_path of their own (they run with the writer''s), or NULL.';

-- The built-in cancellation still writes orders as chunks' owner (the
-- declared changes write as the writer). When orders belongs to another
-- role (the application's, made before chunks came), that role could
-- attach code to it that would run with chunks' owner's rights: every
-- install says so, naming what is attached, until the cancellation runs as
-- the writer too (docs/roles.md "Code on your tables").
create or replace function {{ .schema }}.orders_code_warning() returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_owner regrole;
  v_code text;
begin
  select c.relowner::regrole,
         nullif(concat_ws(', ',
                (select 'triggers ' || string_agg(t.tgname::text, ', ' order by t.tgname) from pg_trigger as t
                  where t.tgrelid = c.oid and not t.tgisinternal),
                case when c.relrowsecurity then 'row security' end), '')
    into v_owner, v_code
    from pg_class as c
   where c.oid = to_regclass('{{ .schema }}.orders') and c.relowner <> (select n.nspowner from pg_namespace as n where n.nspname = '{{ .schema }}');
  if v_owner is not null then
    raise notice 'chunks: {{ .schema }}.orders belongs to %, not to the schema''s owner, and the built-in cancellation writes it with the owner''s rights: % may attach code to it (a trigger, a policy) that would run with them%',
      v_owner, v_owner, coalesce('; it has ' || v_code, '');
  end if;
end
$$;
comment on function {{ .schema }}.orders_code_warning() is
  'chunks helper, run by every install: a notice when orders belongs to a role other than the schema''s owner (whose code on it would run with the owner''s rights when the built-in cancellation writes it), naming its triggers and row security.';
