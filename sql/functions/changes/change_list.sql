-- The declared changes, by name: what change_show says of each, without
-- the generated source.
create or replace function {{ .schema }}.change_list() returns jsonb
language sql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
  select coalesce(jsonb_agg(jsonb_build_object('name', c.name, 'table', c.definition ->> 'table', 'digest', c.digest,
                                               'defined_at', c.defined_at, 'defined_by', c.defined_by,
                                               'jobs', (select count(*) from job_change as jc where jc.change = c.name and jc.digest = c.digest))
                            order by c.name), '[]'::jsonb)
    from changes as c
   where c.retired_at is null
$$;
comment on function {{ .schema }}.change_list() is
  'The declared changes (their live definitions: not retired, retire_change) as a list of {"name", "table", "digest", "defined_at", "defined_by", "jobs" (of this definition)}, by name.';
