-- How many committed targets of JOB_ID, a job of a declared change (or its
-- undo), report would call drifted or missing: its table read as the writer
-- role (change_report_sql). NULL when report would refuse the job (CH409:
-- not sound, not its approval, its change redefined or dropped, or this
-- session may not run code on the table). job_rows counts it for status,
-- the status page and the metrics.
create or replace function {{ .schema }}.change_job_drift(job_id text) returns bigint
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_status jsonb;
begin
  begin
    v_status := writer_run(change_report_sql(change_report_job(change_job_drift.job_id)),
                           change_report_input(array[change_job_drift.job_id]), null);
  exception when sqlstate 'CH409' then
    return null;
  end;
  return (select count(*) from jsonb_array_elements(v_status) as s(e) where s.e ->> 1 <> 'matching');
end
$$;
comment on function {{ .schema }}.change_job_drift(text) is
  'chunks helper (job_rows): the number of committed targets of JOB_ID, a job of a declared change, that report calls drifted or missing; NULL when report would refuse the job.';
