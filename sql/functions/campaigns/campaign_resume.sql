-- Campaigns: an operator gives every job of a campaign back to the fleet.
create or replace function {{ .schema }}.campaign_resume(name text) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '5s'
as $$
declare
  v_campaign campaigns := lock_campaign(campaign_resume.name);
  v_jobs integer;
begin
  update campaigns as c set paused = false where c.name = v_campaign.name;
  update job_queue as q
     set paused = false, visible_at = clock_timestamp(), pause_reason = null, paused_at = null, paused_by = null,
         pause_after = null
    from campaign_jobs as cj
   where cj.campaign = v_campaign.name and q.job_id = cj.job_id and q.paused;
  get diagnostics v_jobs = row_count;
  if v_jobs > 0 then
    perform pg_notify(queue_channel(), v_campaign.name);
  end if;
  return jsonb_build_object('name', v_campaign.name, 'changed', v_campaign.paused or v_jobs > 0, 'jobs', v_jobs);
end
$$;
comment on function {{ .schema }}.campaign_resume(text) is
$c$Resumes campaign NAME: every paused queue row of it (paused by campaign_pause, pause_job or a
conflict) is queued again, visible now, its reason cleared, and queue_channel() is notified
once. Returns {"name", "changed", "jobs" (queue rows it resumed)}.
Errors: 22023 bad name; CH409 unknown campaign; 55P03 a chunk held a job over 5 s.$c$;
