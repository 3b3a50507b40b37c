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
