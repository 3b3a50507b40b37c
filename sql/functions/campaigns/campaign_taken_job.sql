-- Campaigns: the first of the JOBS job ids campaign NAME needs
-- (campaign_job_id) that another job already has, or null.
create or replace function {{ .schema }}.campaign_taken_job(name text, jobs integer) returns text
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  select j.job_id
    from generate_series(0, campaign_taken_job.jobs - 1) as s(seq)
    join jobs as j on j.job_id = campaign_job_id(campaign_taken_job.name, s.seq)
   order by s.seq limit 1
$$;
comment on function {{ .schema }}.campaign_taken_job(text, integer) is
  'chunks helper: the first job id of the JOBS that campaign NAME needs that is already taken, or null.';
