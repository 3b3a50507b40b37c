-- When job JOB_ID last did anything chunks recorded: its registration,
-- its last chunk that a record keeps (change_chunks, or the fleet's
-- job_progress) and its abandon. A job of orders run outside the fleet
-- keeps no time per chunk: its registration stands for it.
create or replace function {{ .schema }}.job_last_seen(job_id text) returns timestamptz
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select greatest((select a.recorded_at from job_approval as a where a.job_id = job_last_seen.job_id),
                  (select max(c.at) from change_chunks as c where c.job_id = job_last_seen.job_id),
                  (select p.at from job_progress as p where p.job_id = job_last_seen.job_id),
                  (select e.abandoned_at from job_ends as e where e.job_id = job_last_seen.job_id))
$$;
comment on function {{ .schema }}.job_last_seen(text) is
  'chunks helper (archive_jobs): the last time job JOB_ID did anything chunks recorded: registered, a chunk recorded (change_chunks, job_progress), abandoned.';

-- An operator puts away the jobs that ended before FINISHED_BEFORE ago:
-- finished (next_index = its targets) or abandoned, and not archived yet
-- (job_archive). They leave the default status, the page and the metrics;
-- their record stays, and report, inspect, verify and undo still answer.
create or replace function {{ .schema }}.archive_jobs(finished_before interval) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_ids text[];
begin
  if archive_jobs.finished_before is null or archive_jobs.finished_before < interval '0' then
    raise exception 'finished_before: must be 0 or more, got %', coalesce(archive_jobs.finished_before::text, 'null')
      using errcode = '22023';
  end if;
  with ended as (
    insert into job_archive (job_id, archived_by)
    select s.job_id, session_user
      from job_shapes as s
     where (s.next_index >= s.targets or exists (select from job_ends as e where e.job_id = s.job_id))
       and not exists (select from job_archive as a where a.job_id = s.job_id)
       and job_last_seen(s.job_id) < now() - archive_jobs.finished_before
    on conflict (job_id) do nothing
    returning job_archive.job_id
  )
  select coalesce(array_agg(e.job_id order by e.job_id), '{}') into v_ids from ended as e;
  return jsonb_build_object('archived', cardinality(v_ids), 'jobs', to_jsonb(v_ids[1:100]), 'more', cardinality(v_ids) > 100);
end
$$;
comment on function {{ .schema }}.archive_jobs(interval) is
$c$Archives every job that ended (finished, or abandoned by abandon_job) more than FINISHED_BEFORE
ago (by job_last_seen: its last recorded chunk, its abandon, or its registration) and is not
archived yet: job_archive records who and when. Archived jobs leave job_status, status_page (the
default chunks status, the page, the metrics' counts); report, inspect, verify and undo still
answer for them. Returns {"archived": N, "jobs": [the first 100 ids], "more": true when N > 100}.
Errors: 22023 a negative or null FINISHED_BEFORE.$c$;
