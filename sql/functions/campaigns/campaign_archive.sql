-- Campaigns: an operator puts away every job of a campaign that has ended
-- (each finished or abandoned), as archive_jobs does one job, whenever it
-- ended. campaign status and report still answer for it.
create or replace function {{ .schema }}.campaign_archive(name text) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_open integer;
  v_archived integer;
begin
  perform check_name(campaign_archive.name, 'name');
  if not exists (select from campaigns as c where c.name = campaign_archive.name) then
    raise exception 'campaign %: not found', campaign_archive.name using errcode = 'CH409';
  end if;
  select count(*) into v_open
    from campaign_jobs as cj
    join job_shapes as s on s.job_id = cj.job_id
   where cj.campaign = campaign_archive.name and s.next_index < s.targets
     and not exists (select from job_ends as e where e.job_id = cj.job_id);
  if v_open > 0 then
    raise exception 'campaign %: % not finished nor abandoned; only an ended campaign is archived', campaign_archive.name,
      case when v_open = 1 then '1 job is' else v_open || ' jobs are' end using errcode = 'CH409';
  end if;
  insert into job_archive (job_id, archived_by)
  select cj.job_id, session_user from campaign_jobs as cj where cj.campaign = campaign_archive.name
  on conflict (job_id) do nothing;
  get diagnostics v_archived = row_count;
  return jsonb_build_object('name', campaign_archive.name, 'archived', v_archived);
end
$$;
comment on function {{ .schema }}.campaign_archive(text) is
$c$Archives every job of campaign NAME (job_archive: who, when), which must all have ended
(finished, or abandoned): they leave the default status, the page and the metrics' counts;
campaign status, campaign report, report and inspect still answer. Returns {"name", "archived"
(jobs archived now; 0 when they all already were)}.
Errors: 22023 bad name; CH409 unknown campaign, or a job of it neither finished nor abandoned.$c$;
