-- Campaigns: the declared change campaign NAME's jobs are of (their
-- job_change: every job of a campaign has the one change of its first), or
-- null for a campaign of orders.
create or replace function {{ .schema }}.campaign_change(name text) returns text
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  select jc.change
    from campaign_jobs as cj
    join job_change as jc on jc.job_id = cj.job_id
   where cj.campaign = campaign_change.name and cj.seq = 0
$$;
comment on function {{ .schema }}.campaign_change(text) is
  'chunks helper: the declared change of campaign NAME (its first job''s job_change), null for a campaign of orders.';
