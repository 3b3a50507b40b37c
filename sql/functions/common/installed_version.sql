-- The schema version of this installation: tern's version table, which
-- chunks migrate keeps. A viewer and an operator may read it (chunks
-- status, /readyz, a worker at start compare it with their binary's).
create or replace function {{ .schema }}.installed_version() returns integer
language sql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
  select max(version) from {{ .schema }}.schema_version
$$;
comment on function {{ .schema }}.installed_version() is
$c$The schema version of this installation: max(version) of schema_version (tern's version table,
kept by chunks migrate), the number of the last migration applied. chunks status, /readyz and a
starting worker compare it with the version their binary installs (chunks version).$c$;
