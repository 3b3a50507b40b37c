-- Fleet mode: an operator stops the fleet from taking a job.
create or replace function {{ .schema }}.pause_job(job_id text) returns boolean
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '5s'
as $$
#variable_conflict use_column
begin
  perform check_name(pause_job.job_id, 'job_id');
  -- The queue row first, as run_next_chunk takes it: this waits for a pass
  -- that is inside a chunk of the job, and once it is locked no pass can
  -- start one. Then lock_unfinished_job waits for any other chunk (a drain).
  perform from job_queue as q where q.job_id = pause_job.job_id for update;
  perform lock_unfinished_job(pause_job.job_id, 'pause');
  insert into job_queue as q (job_id, visible_at, paused, pause_reason, paused_at, paused_by)
  values (pause_job.job_id, clock_timestamp(), true, 'paused by an operator', clock_timestamp(), session_user)
  on conflict (job_id) do update
     set paused = true, pause_reason = excluded.pause_reason, paused_at = excluded.paused_at,
         paused_by = excluded.paused_by, pause_after = null  -- paused now: a pending canary is moot
   where not q.paused;
  return found;
end
$$;
comment on function {{ .schema }}.pause_job(text) is
$c$Pauses a job: no worker starts a chunk of it again until resume_job. It first waits for a
chunk of the job that is in flight (a worker's pass or a drain; lock waits bounded at 5 s),
so when it returns, no chunk of the job runs or will start. The pause records its reason
("paused by an operator"), when, and the role. Returns true when it paused the job, false
when it was already paused. chunks drain and run are not stopped by a pause.
Errors: 22023 bad job_id; CH409 unknown job, or a job that is already done; 55P03 when a
chunk held the job for over 5 s.$c$;

-- The signature of a router (the template is tenant_call.sql): the job of one tenant.
{{ template "common/tenant_call.sql" (merge (dict "name" "pause_job" "returns" "boolean" "volatility" "volatile" "missing" "conflict"
  "settings" (list "lock_timeout = '5s'")
  "comment" `pauses it for the workers.`) .) }}
