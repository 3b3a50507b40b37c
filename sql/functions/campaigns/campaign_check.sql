-- Campaigns: the preflight (check_plan's question) over a whole campaign:
-- would each target not yet committed take its chunk now? One
-- implementation for every campaign: the remaining targets of its
-- unfinished jobs are judged by their change's generated check
-- (change_judge: orders_preview for orders, preview_<name> for a declared
-- change; an undo's by its inverse's rules), one call per change and kind
-- of job (one, for a campaign made by campaign create or campaign undo),
-- not one per job.
drop function if exists {{ .schema }}.campaign_change_check(text, text, integer);
create or replace function {{ .schema }}.campaign_check(name text, max_listed integer default 100) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_campaign campaigns;
  v_group record;
  v_judged jsonb;
  v_remaining integer := 0;
  v_problems integer := 0;
  v_listed jsonb := '[]'::jsonb;
begin
  perform check_name(campaign_check.name, 'name');
  if campaign_check.max_listed is null or campaign_check.max_listed not between 0 and 100000 then
    raise exception 'max_listed: must be between 0 and 100000, got %', coalesce(campaign_check.max_listed::text, 'null')
      using errcode = '22023';
  end if;
  select * into v_campaign from campaigns as c where c.name = campaign_check.name;
  if not found then
    raise exception 'campaign %: not found', campaign_check.name using errcode = 'CH409';
  end if;
  -- The remaining targets, in the campaign's order (its jobs' seq, then
  -- each job's targets: key order), grouped by the change (its definition
  -- now, as check_change judges) and kind their jobs have.
  for v_group in
    select d.def, d.restore, d.tenant, d.change, jsonb_agg(d.e order by d.seq, d.ord) as targets
      from (select cj.seq, x.ord, x.e, j.tenant, jc.change, coalesce(k.kind, '') = 'restore' as restore,
                   case when jc.job_id is null then orders_change() else c.definition end as def
              from campaign_jobs as cj
              join jobs as j on j.job_id = cj.job_id
              left join job_kind as k on k.job_id = j.job_id
              left join job_change as jc on jc.job_id = j.job_id
              left join changes as c on c.name = jc.change and c.retired_at is null
             cross join lateral job_target_rows(j.job_id) as x(e, ord)
             where cj.campaign = campaign_check.name and x.ord > j.next_index
               -- (a target an operator set aside never runs: skip_target)
               and not exists (select from job_skips as s where s.job_id = j.job_id and s.ordinal = x.ord - 1)) as d
     group by d.def, d.restore, d.tenant, d.change
     order by min(d.seq)
  loop
    if v_group.def is null then
      raise exception 'campaign %: its change % is no longer defined (chunks change list)', campaign_check.name, v_group.change
        using errcode = 'CH409';
    end if;
    v_judged := change_judge(v_group.def, v_group.restore, v_group.tenant, v_group.targets);
    v_remaining := v_remaining + jsonb_array_length(v_judged);
    v_problems := v_problems + (select count(*) from jsonb_array_elements(v_judged) as j(e) where j.e ->> 'problem' is not null);
    -- The first MAX_LISTED problems, listed by id for orders, by key for a change.
    v_listed := v_listed || coalesce((
      select jsonb_agg(jsonb_build_object(case when v_group.change is null then 'id' else 'key' end, p.e -> 'key',
                                          'problem', p.e ->> 'problem') order by p.ord)
        from (select j.e, j.ord from jsonb_array_elements(v_judged) with ordinality as j(e, ord)
               where j.e ->> 'problem' is not null
               order by j.ord
               limit greatest(campaign_check.max_listed - jsonb_array_length(v_listed), 0)) as p), '[]');
  end loop;
  return jsonb_build_object('name', v_campaign.name, 'targets', v_campaign.target_count, 'remaining', v_remaining,
                            'ok', v_remaining - v_problems, 'problems', v_problems, 'listed', v_listed);
end
$$;
comment on function {{ .schema }}.campaign_check(text, integer) is
$c$Preflight over campaign NAME, without writing: for every target not yet committed (nor set
aside: skip_target), whether
its row can take its chunk now (orders: order_problem's words, missing, another tenant, state,
revision or qty; a declared change: its chunk's words; an undo campaign: its inverse's).
Returns {"name", "targets", "remaining", "ok", "problems", "listed": [{"id" (orders) or "key"
(a declared change), "problem"}, ...]} with the first MAX_LISTED (default 100) problems in the
campaign's order (key order). Reads this campaign's jobs and judges their remaining targets
with one call of the change's generated check per change and kind of job, not one per job.
Errors: 22023 bad name or max_listed; CH409 unknown campaign, a change no longer defined, or a
declared change's check not as chunks made it.$c$;
