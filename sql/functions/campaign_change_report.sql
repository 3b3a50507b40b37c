-- Campaigns: campaign_report for a campaign of a declared change: report's
-- rules for a change's job (report_change) over every job of it, summed;
-- drifted and missing are the keys (numbers for integer keys, strings
-- otherwise) in key order. Each job gets report's checks
-- (change_report_job); then one EXECUTE per change definition its jobs
-- were approved under (one, unless a job was tampered with) covers all
-- of them, instead of one per job.
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
begin
  for v_group in
    select d.def, array_agg(d.job_id order by d.seq) as job_ids, array_agg(d.targets order by d.seq) as targets,
           array_agg(d.next_index order by d.seq) as next_index, array_agg(d.seq order by d.seq) as seqs,
           sum(d.next_index)::integer as committed
      from (select cj.job_id, cj.seq, j.targets, j.next_index, change_report_job(cj.job_id) as def
              from campaign_jobs as cj
              join jobs as j on j.job_id = cj.job_id
             where cj.campaign = campaign_change_report.name
            offset 0) as d
     group by d.def
  loop
    execute format($q$
      select count(*) filter (where t.status = 'matching')::integer,
             coalesce(jsonb_agg(jsonb_build_array(t.seq, t.ord, t.k, t.status)) filter (where t.status <> 'matching'), '[]')
        from (%s) as t
       where t.committed$q$, change_report_sql(v_group.def))
      into v_part_matching, v_part_off
      using v_group.job_ids, v_group.targets, v_group.next_index, v_group.seqs;
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
