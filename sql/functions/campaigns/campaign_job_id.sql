-- Campaigns: the id of job SEQ (0-based) of campaign NAME. Inlined (no SET).
create or replace function {{ .schema }}.campaign_job_id(name text, seq integer) returns text
language sql immutable parallel safe
as $$
  select name || '-' || lpad((seq + 1)::text, 6, '0')
$$;
comment on function {{ .schema }}.campaign_job_id(text, integer) is
  'chunks helper: the job id of part SEQ (0-based) of campaign NAME: NAME-000001 for seq 0.';
