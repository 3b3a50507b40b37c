-- Campaigns: the queue rows of campaign NAME, locked in job_id order as
-- run_next_chunk takes them (so this waits for every chunk of the
-- campaign in flight, and no pass starts one until the caller commits),
-- then the campaign row. CH409 for an unknown campaign.
-- The return type names the schema quoted: a schema named like a non-reserved
-- keyword (between) cannot qualify a type unquoted.
create or replace function {{ .schema }}.lock_campaign(name text) returns "{{ .schema }}".campaigns
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_campaign campaigns;
begin
  perform check_name(lock_campaign.name, 'name');
  perform from job_queue as q
    join campaign_jobs as cj on cj.job_id = q.job_id
   where cj.campaign = lock_campaign.name
   order by q.job_id
     for update of q;
  select * into v_campaign from campaigns as c where c.name = lock_campaign.name for update;
  if not found then
    raise exception 'campaign %: not found', lock_campaign.name using errcode = 'CH409';
  end if;
  return v_campaign;
end
$$;
comment on function {{ .schema }}.lock_campaign(text) is
  'chunks helper: locks the queue rows of campaign NAME in run_next_chunk''s order, waiting for its chunks in flight, then its campaigns row; CH409 when unknown.';
