-- Campaigns: report() over every job of a campaign (campaign_report_lists),
-- with how the campaign is tied to an undo. jit off: a campaign's one read
-- of its table covers every committed target (100,000 rows), which the
-- planner would JIT-compile for more than the query costs.
create or replace function {{ .schema }}.campaign_report(name text) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
set jit = off
as $$
declare
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
  return campaign_report_lists(campaign_report.name) || v_lineage;
end
$$;
comment on function {{ .schema }}.campaign_report(text) is
$c$report() summed over campaign NAME: {"name", "targets", "committed", "remaining", "matching",
"drifted_count", "missing_count", "drifted", "missing", "undoes", "undone_by"}; drifted and
missing are lists of committed targets' keys (report's rules: ids for orders), in the jobs' order then
key order; undoes names the campaign
that NAME is the undo of (campaign_undo), undone_by the undo campaign of NAME (NULL when none).
When operators set targets aside (skip_target), "skipped_count" and "skipped": [{"job_id", "key",
"reason", "by", "at", "found"}] too; a skipped target is neither committed nor remaining.
Reads this campaign's jobs only, and its table once per change definition; changes nothing.
Errors: 22023 bad name; CH409 unknown campaign, or a job that is no longer its approval or whose
change was redefined or dropped.$c$;
