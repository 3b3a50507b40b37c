-- Campaigns: campaign_report for a campaign of a declared change: report's
-- rules for a change's job (report_change) over every job of it, summed;
-- drifted and missing are the keys (numbers for integer keys, strings
-- otherwise) in key order. Each job gets report's checks
-- (change_report_job); then one read of the table, as the writer role,
-- per change definition its jobs were approved under (one, unless a job
-- was tampered with) covers all of them, instead of one per job.
create or replace function {{ .schema }}.campaign_change_report(name text) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_group record;
  v_matching integer := 0;
  v_committed integer := 0;
  v_off jsonb := '[]'::jsonb; -- the committed targets not matching: [seq, ord, key, status], of every definition
  v_part_matching integer;
  v_part_off jsonb;
  v_input jsonb;
  v_status jsonb;
begin
  for v_group in
    select d.def, array_agg(d.job_id order by d.seq) as job_ids, sum(d.next_index)::integer as committed
      from (select cj.job_id, cj.seq, j.next_index, change_report_job(cj.job_id) as def
              from campaign_jobs as cj
              join jobs as j on j.job_id = cj.job_id
             where cj.campaign = campaign_change_report.name
            offset 0) as d
     group by d.def
  loop
    -- The committed targets' audit (chunks' tables, read here), then their
    -- rows (the user's table, read as the writer role).
    v_input := change_report_input(v_group.job_ids);
    v_status := writer_run(change_report_sql(v_group.def), v_input, null);
    select count(*) filter (where s.e ->> 1 = 'matching')::integer,
           coalesce(jsonb_agg(jsonb_build_array(i.e -> 's', i.e -> 'x', i.e -> 'k', s.e ->> 1)) filter (where s.e ->> 1 <> 'matching'), '[]')
      into v_part_matching, v_part_off
      from jsonb_array_elements(v_status) as s(e)
      join jsonb_array_elements(v_input) as i(e) on i.e -> 'o' = s.e -> 0;
    v_matching := v_matching + v_part_matching;
    v_off := v_off || v_part_off;
    v_committed := v_committed + v_group.committed;
  end loop;
  return (
    select jsonb_build_object(
             'name', c.name, 'targets', c.target_count, 'committed', v_committed, 'remaining', c.target_count - v_committed,
             'matching', v_matching,
             'drifted_count', (select count(*) from jsonb_array_elements(v_off) as o where o ->> 3 = 'drifted')::integer,
             'missing_count', (select count(*) from jsonb_array_elements(v_off) as o where o ->> 3 = 'missing')::integer,
             'drifted', coalesce((select jsonb_agg(o -> 2 order by (o ->> 0)::integer, (o ->> 1)::integer)
                                    from jsonb_array_elements(v_off) as o where o ->> 3 = 'drifted'), '[]'),
             'missing', coalesce((select jsonb_agg(o -> 2 order by (o ->> 0)::integer, (o ->> 1)::integer)
                                    from jsonb_array_elements(v_off) as o where o ->> 3 = 'missing'), '[]'))
      from campaigns as c
     where c.name = campaign_change_report.name);
end
$$;
comment on function {{ .schema }}.campaign_change_report(text) is
  'chunks helper (campaign_report, campaign_status): report_change summed over every job of campaign NAME, a campaign of a declared change, in campaign_report''s shape with the keys of the drifted and missing rows in key order; one EXECUTE per change definition, not per job.';
