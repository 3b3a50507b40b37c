-- The statement report_change and campaign_change_report EXECUTE for jobs
-- of the declared change DEFINITION: one row per target of every job
-- given as four parallel arrays ($1 job ids, $2 their targets, $3 their
-- next_index, $4 a sort key per job), with the target's key k (a number
-- for an integer key, a string otherwise), its ordinal ord in its job,
-- whether it is committed, and its status by report's rules for a change:
-- matching when the row still has every value the change wrote
-- (change_audit.after) and, with a version, the version the change left;
-- missing when no row has its key; drifted otherwise (for an undo, whose
-- audit's after is what the undone job found, matching is the row as
-- restored). One statement over the user's table, built from the
-- definition (%I, the key column's type): report is no hot path, so it is
-- EXECUTEd, once for any number of jobs.
create or replace function {{ .schema }}.change_report_sql(definition jsonb) returns text
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_key text := definition ->> 'key';
  v_key_type text;
  v_written text[];
begin
  select f.type into v_key_type from change_fields(definition) as f where f.role = 'key';
  v_written := array(select k from jsonb_object_keys(coalesce(definition -> 'set', '{}')) as k)
               || array(select k from jsonb_object_keys(coalesce(definition -> 'set_from_target', '{}')) as k);
  return format($q$
    select p.seq, x.ord, x.e -> %1$L as k, x.ord <= p.next_index as committed,
           case when r.%2$I is null then 'missing'
                when jsonb_build_object(%3$s) = a.after %4$s then 'matching'
                else 'drifted' end as status
      from unnest($1::text[], $2::jsonb[], $3::integer[], $4::integer[]) as p(job_id, targets, next_index, seq)
     cross join lateral jsonb_array_elements(p.targets) with ordinality as x(e, ord)
      left join change_audit as a on a.job_id = p.job_id and a.ordinal = x.ord - 1
      left join %5$s as r on r.%2$I = (x.e ->> %1$L)::%6$s$q$,
    v_key, v_key,
    (select string_agg(format('%L, r.%I', c, c), ', ') from unnest(v_written) as c),
    case when definition ? 'version' then format('and r.%I = a.version_after', definition ->> 'version') else '' end,
    (definition ->> 'table')::regclass, v_key_type);
end
$$;
comment on function {{ .schema }}.change_report_sql(jsonb) is
  'chunks helper (report_change, campaign_change_report): the statement that gives every target of jobs of the declared change DEFINITION (four arrays: job ids, targets, next_index, a sort key) with its key, ordinal, whether committed, and report''s status for it (matching, drifted or missing).';
