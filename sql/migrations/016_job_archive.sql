-- Jobs put away (issue 38: "nothing ends"; chunks status printed 5,174
-- lines for 5,168 jobs): a finished or abandoned job an operator archived
-- leaves the default status, the status page and the metrics' counts. Its
-- record stays whole (jobs, its approval, its audit, its skips): report,
-- inspect, verify and undo answer for it as before. One row a job,
-- written once (archive_jobs, campaign_archive).
create table if not exists {{ .schema }}.job_archive(
  job_id text primary key references {{ .schema }}.jobs(job_id),
  archived_by text not null,
  archived_at timestamptz not null default now()
);
