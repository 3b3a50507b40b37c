-- Campaigns: the undo of a whole campaign, as one campaign of undo jobs
-- (register_undo of every job of it that has committed orders still as it
-- left them), in one transaction. A campaign of a declared change is undone
-- by the same rules: register_undo of every job of it with a committed row
-- still as it left it (report's matching), each a job of the change run by
-- its inverse.
create or replace function {{ .schema }}.campaign_undo(name text, undo_name text default null) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '5s'
as $$
declare
  v_campaign campaigns := lock_campaign(campaign_undo.name);
  v_undo text := coalesce(campaign_undo.undo_name, left(campaign_undo.name, limit_of('campaign_name_max_length')::integer - length('-undo')) || '-undo');
  v_existing campaigns;
  v_seq integer := 0;
  v_targets integer := 0;
  v_job record;
  v_res jsonb;
  v_drifted jsonb := '[]'::jsonb;
  v_missing jsonb := '[]'::jsonb;
  v_digest text;
  v_change text := campaign_change(v_campaign.name);
  v_noun text := case when v_change is null then 'order' else 'row' end;
begin
  perform check_name(v_undo, 'undo_name');
  if length(v_undo) > limit_of('campaign_name_max_length') then
    raise exception 'undo_name: must be at most % characters (job ids add -NNNNNN), got %', limit_of('campaign_name_max_length'),
      length(v_undo) using errcode = '22023';
  end if;
  if v_campaign.undoes is not null then
    raise exception 'campaign %: is the undo of %; an undo is not undone', v_campaign.name, v_campaign.undoes using errcode = 'CH409';
  end if;
  select * into v_existing from campaigns as c where c.name = v_undo;
  if found then
    if v_existing.undoes is distinct from v_campaign.name then
      raise exception 'campaign %: already exists, and not as the undo of %', v_undo, v_campaign.name using errcode = 'CH409';
    end if;
    return jsonb_build_object('name', v_undo, 'undoes', v_campaign.name, 'created', false, 'jobs', v_existing.job_count,
                              'targets', v_existing.target_count)
           || case when v_change is not null then jsonb_build_object('change', v_change) else '{}' end;
  end if;
  select c.name into v_existing.name from campaigns as c where c.undoes = v_campaign.name;
  if found then
    raise exception 'campaign %: already undone by %', v_campaign.name, v_existing.name using errcode = 'CH409';
  end if;
  -- The record first (campaign_jobs refers to it); its counts are set below.
  insert into campaigns (name, tenant, chunk_size, job_count, target_count, digest, queue_window, released, undoes)
  values (v_undo, v_campaign.tenant, v_campaign.chunk_size, 1, 1, '', v_campaign.queue_window, 0, v_campaign.name);
  -- Every job with a committed order (a change's row) still as the campaign
  -- left it, in seq order. register_undo refuses a job that can still make
  -- progress unpaused: pause the campaign first (campaign_pause).
  for v_job in
    select cj.job_id
      from campaign_jobs as cj
      join jobs as j on j.job_id = cj.job_id
      -- report's counts (jobs_drift; none for a job report refuses: its
      -- register_undo says why)
      left join jobs_drift(array(select c.job_id from campaign_jobs as c where c.campaign = v_campaign.name)) as d
        on d.job_id = cj.job_id
     where cj.campaign = v_campaign.name and j.next_index > 0 and (d.job_id is null or d.matching > 0)
     order by cj.seq
  loop
    v_res := register_undo(v_job.job_id, campaign_job_id(v_undo, v_seq));
    insert into campaign_jobs (job_id, campaign, seq) values (v_res ->> 'job_id', v_undo, v_seq);
    v_targets := v_targets + jsonb_array_length(v_res -> 'targets');
    v_drifted := v_drifted || (v_res -> 'drifted');
    v_missing := v_missing || (v_res -> 'missing');
    v_seq := v_seq + 1;
  end loop;
  if v_seq = 0 then
    raise exception 'campaign %: nothing to undo: no committed % of it is as it left it', v_campaign.name, v_noun using errcode = 'CH409';
  end if;
  -- The digest of the undo's approval: its targets, in its order (a
  -- change's, as campaign_create_change's digest names the change).
  select encode(sha256(convert_to(coalesce(v_campaign.tenant, '*') || '/' || v_campaign.chunk_size || '/'
                                  || case when v_change is null
                                          then string_agg(x.e ->> 'id' || ':' || (x.e ->> 'revision') || ':' || (x.e ->> 'qty'), ','
                                                          order by (x.e -> 'id')::integer)
                                          else max(jc.change || ':' || jc.digest) || '/'
                                               || string_agg(x.e::text, ',' order by cj.seq, x.ord) end, 'UTF8')), 'hex')
    into v_digest
    from campaign_jobs as cj
    join jobs as j on j.job_id = cj.job_id
    left join job_change as jc on jc.job_id = cj.job_id
   cross join lateral job_target_rows(j.job_id) as x(e, ord)
   where cj.campaign = v_undo;
  update campaigns as c
     set job_count = v_seq, target_count = v_targets, digest = v_digest, released = least(c.queue_window, v_seq)
   where c.name = v_undo;
  -- The fairness window: register_undo queued every undo job; all but the
  -- first queue_window wait to be released as the others finish.
  delete from job_queue as q
   using campaign_jobs as cj
   where cj.campaign = v_undo and cj.seq >= v_campaign.queue_window and q.job_id = cj.job_id;
  return jsonb_build_object('name', v_undo, 'undoes', v_campaign.name, 'created', true, 'jobs', v_seq, 'targets', v_targets,
                            'drifted', v_drifted, 'missing', v_missing)
         || case when v_change is not null then jsonb_build_object('change', v_change) else '{}' end;
end
$$;
comment on function {{ .schema }}.campaign_undo(text, text) is
$c$Registers the undo of campaign NAME as campaign UNDO_NAME (NULL: NAME-undo), in one
transaction: register_undo of every job of NAME with a committed order still as it left it
(jobs UNDO_NAME-000001, ... in NAME's order, each kind 'restore'), recorded in campaigns
(undoes = NAME) and campaign_jobs, with NAME's queue window. The campaign must be paused
(campaign_pause) or finished, as register_undo requires of each job. Returns {"name",
"undoes", "created", "jobs", "targets", "drifted", "missing"} (and "change" for a campaign of a
declared change); created is false when UNDO_NAME already is NAME's undo. Lock waits are bounded at 5 s.
A campaign of a declared change is undone by the same rules: every job of it with a committed
row still as it left it (report's matching) gets its undo, a job of the same change
that restores the rows' before values (register_undo_job); drifted and missing are keys.
Errors: 22023 bad names; CH409 unknown campaign, an undo campaign, already undone, nothing to
undo, or a job of it that can still make progress unpaused.$c$;
