-- Campaigns: campaign_report's counts and lists for any campaign (NAME):
-- report's rules (change_status) over every committed target of its jobs,
-- by their audit rows, summed; drifted and missing are the keys (numbers
-- for integer keys, strings otherwise, objects for composite keys) in the
-- jobs' order, then key order. Each job must still be its approval and
-- its change the definition it was approved under (CH409, in report's
-- words), checked for all the jobs in one statement; then one read of the
-- table per definition (one, unless a job was tampered with), not one per
-- job. Targets an operator set aside (skip_target) are in neither
-- committed nor remaining: "skipped" lists them with their decisions
-- (only when there are any).
drop function if exists {{ .schema }}.campaign_change_report(text);
drop function if exists {{ .schema }}.campaign_committed_state(text);
create or replace function {{ .schema }}.campaign_report_lists(name text) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_group record;
  v_status jsonb;
  v_matching integer := 0;
  v_off jsonb := '[]'::jsonb; -- the committed targets not matching: [seq, ordinal, key, status], of every definition
begin
  -- report's checks of every job (report_definitions): the jobs report
  -- would refuse have no definition, and come first, in one group.
  for v_group in
    select d.definition as def, array_agg(d.job_id order by d.seq) as job_ids, array_agg(d.seq - 1 order by d.seq) as seqs,
           (array_agg(d.problem order by d.seq))[1] as problem
      from report_definitions(array(select cj.job_id from campaign_jobs as cj
                                     where cj.campaign = campaign_report_lists.name order by cj.seq)) as d
     group by d.definition
     order by d.definition is not null
  loop
    if v_group.def is null then
      raise exception '%', v_group.problem using errcode = 'CH409';
    end if;
    v_status := change_status(v_group.def, v_group.job_ids);
    v_matching := v_matching + (v_status ->> 'matching')::integer;
    v_off := v_off || coalesce((
      select jsonb_agg(jsonb_build_array(v_group.seqs[(o.e ->> 0)::integer], (o.e ->> 1)::integer, o.e -> 3, o.e ->> 2))
        from jsonb_array_elements(v_status -> 'off') as o(e)), '[]');
  end loop;
  return (
    select jsonb_build_object(
             'name', c.name, 'targets', c.target_count, 'committed', p.committed - p.skipped_before,
             'remaining', c.target_count - p.committed - (p.skipped - p.skipped_before),
             'matching', v_matching,
             'drifted_count', (select count(*) from jsonb_array_elements(v_off) as o where o ->> 3 = 'drifted')::integer,
             'missing_count', (select count(*) from jsonb_array_elements(v_off) as o where o ->> 3 = 'missing')::integer,
             'drifted', coalesce((select jsonb_agg(o -> 2 order by (o ->> 0)::integer, (o ->> 1)::integer)
                                    from jsonb_array_elements(v_off) as o where o ->> 3 = 'drifted'), '[]'),
             'missing', coalesce((select jsonb_agg(o -> 2 order by (o ->> 0)::integer, (o ->> 1)::integer)
                                    from jsonb_array_elements(v_off) as o where o ->> 3 = 'missing'), '[]'))
           || case when p.skipped > 0 then jsonb_build_object('skipped_count', p.skipped, 'skipped', (
                select jsonb_agg(jsonb_build_object('job_id', s.job_id, 'key', change_key_of(ch.definition, ct.target), 'reason', s.reason,
                                                    'by', s.skipped_by, 'at', s.skipped_at, 'found', s.found) order by cj.seq, s.ordinal)
                  from campaign_jobs as cj
                  join job_skips as s on s.job_id = cj.job_id
                  join change_targets as ct on ct.job_id = s.job_id and ct.ordinal = s.ordinal
                  join job_change as jc on jc.job_id = s.job_id
                  join changes as ch on ch.name = jc.change and ch.digest = jc.digest
                 where cj.campaign = campaign_report_lists.name)) else '{}' end
      from campaigns as c
     cross join (select coalesce(sum(j.next_index), 0)::integer as committed,
                        coalesce(sum(k.skipped), 0)::integer as skipped, coalesce(sum(k.before), 0)::integer as skipped_before
                   from campaign_jobs as cj
                   join jobs as j on j.job_id = cj.job_id
                   left join lateral (select count(*) as skipped, count(*) filter (where s.ordinal < j.next_index) as before
                                        from job_skips as s where s.job_id = j.job_id) as k on true
                  where cj.campaign = campaign_report_lists.name) as p
     where c.name = campaign_report_lists.name);
end
$$;
comment on function {{ .schema }}.campaign_report_lists(text) is
  'chunks helper (campaign_report): report''s rules over every committed target of campaign NAME (its audit rows), in campaign_report''s shape with the keys of the drifted and missing rows; CH409 when a job is not its approval or its change was redefined or dropped; one read of the table per change definition, not per job.';
