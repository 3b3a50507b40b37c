-- Campaigns: set aside, for REASON, every target of campaign NAME's paused
-- jobs whose row does not match now (issue 38: "chunks campaign skip
-- --mismatched"), then give those jobs back to the fleet. Each target is
-- judged by its change's generated check (change_judge, as campaign check
-- judges it) and skipped by skip_target, so each decision is recorded as
-- one skip is, with what the check said of its row. The campaign's queue
-- rows are locked first (lock_campaign: no chunk of it runs meanwhile). A
-- job paused with no mismatched target stays paused, and so does every
-- job of a campaign an operator paused (campaign resume does that).
create or replace function {{ .schema }}.campaign_skip(name text, reason text) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '5s'
as $$
declare
  v_campaign campaigns;
  v_job record;
  v_judged record;
  v_skip jsonb;
  v_skipped jsonb := '[]'::jsonb;
  v_resumed text[] := '{}'::text[];
begin
  perform check_name(campaign_skip.name, 'name');
  perform check_reason(campaign_skip.reason, 'the targets are skipped');
  v_campaign := lock_campaign(campaign_skip.name);
  for v_job in
    select j.job_id, j.tenant, jc.change, c.definition, coalesce(k.kind, '') = 'restore' as restore,
           (select jsonb_agg(x.e order by x.ord)
              from job_target_rows(j.job_id) as x(e, ord)
             where x.ord > j.next_index
               and not exists (select from job_skips as s where s.job_id = j.job_id and s.ordinal = x.ord - 1)) as targets
      from campaign_jobs as cj
      join job_queue as q on q.job_id = cj.job_id and q.paused
      join jobs as j on j.job_id = cj.job_id
      left join job_change as jc on jc.job_id = j.job_id
      left join changes as c on c.name = jc.change and c.digest = jc.digest and c.retired_at is null
      left join job_kind as k on k.job_id = j.job_id
     where cj.campaign = v_campaign.name
       and not exists (select from job_ends as e where e.job_id = j.job_id)
     order by cj.seq
  loop
    if v_job.change is null then
      raise exception 'campaign %: a campaign of orders (the contract''s cancellation) has no skips (docs/limits-and-decisions.md "Skips")',
        v_campaign.name using errcode = 'CH409';
    end if;
    if is_two_person(v_job.job_id) then
      raise exception 'campaign %: is two-person: each skip is approved on its own (chunks skip JOB KEY proposes one, chunks approve approves it)',
        v_campaign.name using errcode = 'CH409';
    end if;
    if v_job.definition is null then
      raise exception 'job %: its change % was redefined or dropped since it was approved', v_job.job_id, v_job.change
        using errcode = 'CH409';
    end if;
    if v_job.targets is null then
      continue;
    end if;
    for v_judged in
      select e -> 'key' as key
        from jsonb_array_elements(change_judge(v_job.definition, v_job.restore, v_job.tenant, v_job.targets)) with ordinality as x(e, o)
       where e ->> 'problem' is not null
       order by o
    loop
      v_skip := skip_target(v_job.job_id, v_judged.key, campaign_skip.reason);
      v_skipped := v_skipped || jsonb_build_object('job_id', v_job.job_id, 'key', v_skip -> 'key', 'found', v_skip -> 'found');
      if v_job.job_id <> all (v_resumed) then
        v_resumed := v_resumed || v_job.job_id;
      end if;
    end loop;
  end loop;
  -- Those jobs go on past what was set aside, unless the campaign is paused.
  if v_campaign.paused then
    v_resumed := '{}'::text[];
  else
    -- (resume_job's one rule for giving a job back: queued, visible now, notified)
    perform resume_job(r) from unnest(v_resumed) as r;
  end if;
  return jsonb_build_object('name', v_campaign.name, 'reason', campaign_skip.reason, 'skipped', v_skipped,
                            'resumed', to_jsonb(v_resumed), 'campaign_paused', v_campaign.paused);
end
$$;
comment on function {{ .schema }}.campaign_skip(text, text) is
$c$Sets aside, for REASON (1 to 500 characters), every target of campaign NAME's paused jobs
whose row does not match now (the change's check, as campaign_check judges), each as
skip_target records it (who, when, REASON, what the check said of its row), then queues those
jobs again, visible now (not when the campaign itself is paused). Targets already set aside
are not judged again. Returns {"name", "reason", "skipped": [{"job_id", "key", "found"}],
"resumed": [job ids], "campaign_paused"}. Waits for the campaign's chunks in flight (lock
waits bounded at 5 s).
Errors: 22023 bad name or reason; CH409 unknown campaign, a campaign of orders, a two-person campaign (each skip is
approved on its own: skip_target proposes it), or a change
redefined since its jobs were approved.$c$;
