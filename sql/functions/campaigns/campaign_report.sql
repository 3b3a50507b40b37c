-- Campaigns: report() over every job of a campaign, in one query.
-- jit off: the planner prices campaign_committed_state's probes for ids outside
-- its range for every row, and would JIT-compile the query for probes that
-- do not run (campaign_committed_state.sql).
create or replace function {{ .schema }}.campaign_report(name text) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
set jit = off
as $$
declare
  v_report jsonb;
  v_lineage jsonb;
begin
  perform check_name(campaign_report.name, 'name');
  -- How the campaign is tied to an undo, as job_lineage says of a job.
  select jsonb_build_object('undoes', c.undoes, 'undone_by', (select u.name from campaigns as u where u.undoes = c.name))
    into v_lineage
    from campaigns as c
   where c.name = campaign_report.name;
  if v_lineage is null then
    raise exception 'campaign %: not found', campaign_report.name using errcode = 'CH409';
  end if;
  if campaign_change(campaign_report.name) is not null then
    return campaign_change_report(campaign_report.name) || v_lineage;
  end if;
  select jsonb_build_object(
           'name', c.name, 'targets', c.target_count, 'committed', p.committed, 'remaining', c.target_count - p.committed,
           'matching', r.matching, 'drifted_count', r.drifted_count, 'missing_count', r.missing_count,
           'drifted', r.drifted, 'missing', r.missing)
    into v_report
    from campaigns as c
   cross join (select coalesce(sum(j.next_index), 0)::integer as committed
                 from campaign_jobs as cj
                 join jobs as j on j.job_id = cj.job_id
                where cj.campaign = campaign_report.name) as p
   cross join (select count(*) filter (where t.matching)::integer as matching,
                      count(*) filter (where not (t.matching or t.missing))::integer as drifted_count,
                      count(*) filter (where t.missing)::integer as missing_count,
                      coalesce(jsonb_agg(t.id order by t.id) filter (where not (t.matching or t.missing)), '[]') as drifted,
                      coalesce(jsonb_agg(t.id order by t.id) filter (where t.missing), '[]') as missing
                 from campaign_committed_state(campaign_report.name) as t) as r
   where c.name = campaign_report.name;
  return v_report || v_lineage;
end
$$;
comment on function {{ .schema }}.campaign_report(text) is
$c$report() summed over campaign NAME: {"name", "targets", "committed", "remaining", "matching",
"drifted_count", "missing_count", "drifted", "missing", "undoes", "undone_by"}; drifted and
missing are id-ordered lists of committed orders (report's rules); undoes names the campaign
that NAME is the undo of (campaign_undo), undone_by the undo campaign of NAME (NULL when none).
One SELECT of its record and its undo, one over this campaign's jobs only; changes nothing. Errors: 22023 bad name; CH409
unknown campaign.$c$;
