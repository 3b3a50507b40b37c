-- report's answer for a job of a declared change (job_change): the six
-- lists of report, each of the targets' keys (numbers for integer keys,
-- strings otherwise) in key order. A committed row is matching when it
-- still has every value the change wrote (change_audit.after) and, with a
-- version, the version the change left; missing when no row has its key;
-- drifted otherwise. For an undo (register_undo), whose audit's after is
-- what the undone job found, matching is the row as restored. The job must
-- still be its approval and its change the definition it was approved
-- under (CH409, as run_chunk says). One
-- statement over the user's table, built from the definition (%I, the key
-- column's type): report is no hot path, so it is EXECUTEd.
create or replace function {{ .schema }}.report_change(job_id text) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_job record;
  v_def jsonb;
  v_problem text;
  v_key text;
  v_key_type text;
  v_written text[];
  v_report jsonb;
begin
  select j.job_id, j.tenant, j.targets, j.chunk_size, j.next_index, jc.change, jc.digest,
         case when k.kind = 'restore' then 'restore' else 'change' end as kind,
         ap.kind as a_kind, ap.tenant as a_tenant, ap.targets_sha256 as a_targets_sha256, ap.chunk_size as a_chunk_size
    into v_job
    from jobs as j
    join job_change as jc on jc.job_id = j.job_id
    left join job_kind as k on k.job_id = j.job_id
    left join job_approval as ap on ap.job_id = j.job_id
   where j.job_id = report_change.job_id;
  if not found then
    raise exception 'job %: not found', report_change.job_id using errcode = 'CH409';
  end if;
  if jsonb_typeof(v_job.targets) is distinct from 'array' or v_job.next_index not between 0 and jsonb_array_length(v_job.targets) then
    raise exception 'job %: the stored job is not sound', v_job.job_id using errcode = 'CH409';
  end if;
  v_problem := approval_problem(v_job.job_id, v_job.kind, v_job.tenant, v_job.targets, v_job.chunk_size,
                                v_job.a_kind, v_job.a_tenant, v_job.a_targets_sha256, v_job.a_chunk_size);
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'CH409';
  end if;
  select c.definition into v_def from changes as c where c.name = v_job.change and c.digest = v_job.digest;
  if not found then
    raise exception 'job %: its change % was redefined or dropped since it was approved', v_job.job_id, v_job.change
      using errcode = 'CH409';
  end if;
  v_key := v_def ->> 'key';
  select f.type into v_key_type from change_fields(v_def) as f where f.role = 'key';
  v_written := array(select k from jsonb_object_keys(coalesce(v_def -> 'set', '{}')) as k)
               || array(select k from jsonb_object_keys(coalesce(v_def -> 'set_from_target', '{}')) as k);
  execute format($q$
    select jsonb_build_object(
             'approved', coalesce(jsonb_agg(t.k order by t.ord), '[]'),
             'committed', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.ord <= $2), '[]'),
             'remaining', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.ord > $2), '[]'),
             'matching', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.ord <= $2 and t.status = 'matching'), '[]'),
             'drifted', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.ord <= $2 and t.status = 'drifted'), '[]'),
             'missing', coalesce(jsonb_agg(t.k order by t.ord) filter (where t.ord <= $2 and t.status = 'missing'), '[]'))
      from (select x.e -> %1$L as k, x.ord,
                   case when r.%2$I is null then 'missing'
                        when jsonb_build_object(%3$s) = a.after %4$s then 'matching'
                        else 'drifted' end as status
              from jsonb_array_elements($1) with ordinality as x(e, ord)
              left join change_audit as a on a.job_id = $3 and a.ordinal = x.ord - 1
              left join %5$s as r on r.%2$I = (x.e ->> %1$L)::%6$s) as t$q$,
    v_key, v_key,
    (select string_agg(format('%L, r.%I', c, c), ', ') from unnest(v_written) as c),
    case when v_def ? 'version' then format('and r.%I = a.version_after', v_def ->> 'version') else '' end,
    (v_def ->> 'table')::regclass, v_key_type)
    into v_report using v_job.targets, v_job.next_index, v_job.job_id;
  return v_report;
end
$$;
comment on function {{ .schema }}.report_change(text) is
  'chunks helper: report''s six lists for a job of a declared change, by key (matching: the row still has every value the change wrote and the version it left; missing: no row has the key; drifted otherwise); CH409 when the job is not its approval or its change was redefined or dropped.';
