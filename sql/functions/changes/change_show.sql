-- What a DBA reviews of a declared change: its definition, digest, who
-- defined it when, how many jobs it has, and the source of its generated
-- function as PostgreSQL has it (pg_get_functiondef).
create or replace function {{ .schema }}.change_show(name text) returns jsonb
language sql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
  select jsonb_build_object('name', c.name, 'definition', c.definition, 'digest', c.digest,
                            'defined_at', c.defined_at, 'defined_by', c.defined_by,
                            'jobs', (select count(*) from job_change as jc where jc.change = c.name and jc.digest = c.digest),
                            'function', c.function_name,
                            'source', (select string_agg(pg_get_functiondef(p.oid), E'\n' order by p.pronargs desc) from pg_proc as p
                                        where p.pronamespace = '{{ .schema }}'::regnamespace and p.proname = c.function_name))
    from changes as c
   where c.name = change_show.name and c.retired_at is null
$$;
comment on function {{ .schema }}.change_show(text) is
  'The declared change NAME as {"name", "definition", "digest", "defined_at", "defined_by", "jobs", "function", "source" (the CREATE text of the generated functions, the change and its check, pg_get_functiondef; null when they are gone)}, or NULL when there is no such change (a retired one, retire_change, is not shown).';
