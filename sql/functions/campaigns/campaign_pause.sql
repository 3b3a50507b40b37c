-- Campaigns: an operator stops the fleet from taking any job of a campaign.
create or replace function {{ .schema }}.campaign_pause(name text) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '5s'
as $$
declare
  v_campaign campaigns := lock_campaign(campaign_pause.name);
  v_jobs integer;
begin
  update campaigns as c set paused = true where c.name = v_campaign.name;
  update job_queue as q
     set paused = true, pause_reason = 'campaign paused by an operator', paused_at = clock_timestamp(),
         paused_by = session_user, pause_after = null
    from campaign_jobs as cj
   where cj.campaign = v_campaign.name and q.job_id = cj.job_id and not q.paused;
  get diagnostics v_jobs = row_count;
  return jsonb_build_object('name', v_campaign.name, 'changed', not v_campaign.paused or v_jobs > 0, 'jobs', v_jobs);
end
$$;
comment on function {{ .schema }}.campaign_pause(text) is
$c$Pauses every job of campaign NAME: waits for its chunks in flight (lock waits bounded at 5 s),
then pauses its queued jobs and marks the campaign paused, so the jobs it releases later are
queued paused. Returns {"name", "changed", "jobs" (queue rows it paused)}.
Errors: 22023 bad name; CH409 unknown campaign; 55P03 a chunk held a job over 5 s.$c$;
