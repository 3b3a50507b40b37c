-- Campaigns: the record of campaign NAME in campaigns (campaign_create,
-- campaign_create_change), first, so that a concurrent create of the same
-- name waits here. Returns the create's answer {"name", "created", "jobs",
-- "targets", "digest"}: created true when recorded now (the caller then
-- writes its jobs), false when the same approval (DIGEST) is already
-- recorded; null when another approval is, for the caller to name the
-- difference. CH409 when a job id the campaign needs is taken.
create or replace function {{ .schema }}.campaign_record(name text, tenant text, chunk_size integer, jobs integer,
                                                         targets integer, digest text, queue_window integer) returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_old campaigns;
  v_taken text;
begin
  insert into campaigns as c (name, tenant, chunk_size, job_count, target_count, digest, queue_window, released)
  values (campaign_record.name, campaign_record.tenant, campaign_record.chunk_size, campaign_record.jobs, campaign_record.targets,
          campaign_record.digest, campaign_record.queue_window, least(campaign_record.queue_window, campaign_record.jobs))
  on conflict on constraint campaigns_pkey do nothing;
  if not found then
    select * into v_old from campaigns as c where c.name = campaign_record.name;
    if v_old.digest = campaign_record.digest then
      return jsonb_build_object('name', v_old.name, 'created', false, 'jobs', v_old.job_count,
                                'targets', v_old.target_count, 'digest', v_old.digest);
    end if;
    return null;
  end if;
  v_taken := campaign_taken_job(campaign_record.name, campaign_record.jobs);
  if v_taken is not null then
    raise exception 'campaign %: job % already exists and is not part of it', campaign_record.name, v_taken
      using errcode = 'CH409';
  end if;
  return jsonb_build_object('name', campaign_record.name, 'created', true, 'jobs', campaign_record.jobs,
                            'targets', campaign_record.targets, 'digest', campaign_record.digest);
end
$$;
comment on function {{ .schema }}.campaign_record(text, text, integer, integer, integer, text, integer) is
  'chunks helper (campaign_create, campaign_create_change): records campaign NAME in campaigns; returns the create''s answer (created true or, for the same DIGEST already recorded, false), null when another approval is recorded under NAME; CH409 when a job id it needs is taken.';
