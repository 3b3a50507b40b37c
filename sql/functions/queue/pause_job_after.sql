-- Canary (README "Safety"): the fleet runs AFTER more chunks of a job, and
-- the pass that commits the last of them pauses the job in the same
-- transaction (run_next_chunk counts pause_after down), so no further chunk
-- starts before a person has looked and resumed it.
create or replace function {{ .schema }}.pause_job_after(job_id text, after integer) returns boolean
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '5s'
as $$
#variable_conflict use_column
declare
  v_n integer;
  v_next_index integer;
  v_chunk_size integer;
  v_left integer;
  v_was_paused boolean;
begin
  perform check_name(pause_job_after.job_id, 'job_id');
  if pause_job_after.after is null or pause_job_after.after not between 1 and limit_of('change_targets_max') then
    raise exception 'after: must be between 1 and % chunks, got %', limit_of('change_targets_max'), coalesce(pause_job_after.after::text, 'null')
      using errcode = '22023';
  end if;
  -- Locks in run_next_chunk's order, as pause_job: the queue row (this
  -- waits for a pass inside a chunk of the job), then the job row (for any
  -- other chunk in flight). The count starts after that chunk.
  select q.paused into v_was_paused from job_queue as q where q.job_id = pause_job_after.job_id for update;
  perform lock_unfinished_job(pause_job_after.job_id, 'pause');
  perform check_not_undone(pause_job_after.job_id, 'run');
  select s.targets, s.next_index, s.chunk_size into v_n, v_next_index, v_chunk_size
    from job_shapes as s
   where s.job_id = pause_job_after.job_id;
  v_left := (v_n - v_next_index + v_chunk_size - 1) / v_chunk_size;
  if pause_job_after.after >= v_left then
    raise exception 'job %: only % left (next_index % of %, % per chunk): after % it would be done, not paused; chunks resume % runs it to its end',
      pause_job_after.job_id, case when v_left = 1 then '1 chunk' else v_left || ' chunks' end, v_next_index, v_n,
      v_chunk_size, pause_job_after.after, pause_job_after.job_id using errcode = 'CH409';
  end if;
  -- Queued (a paused job visible now, behind every job already waiting;
  -- an idle one gets its row), its pause reason cleared, with the count.
  insert into job_queue as q (job_id, visible_at, pause_after)
  values (pause_job_after.job_id, clock_timestamp(), pause_job_after.after)
  on conflict (job_id) do update
     set paused = false, visible_at = case when q.paused then clock_timestamp() else q.visible_at end,
         pause_reason = null, paused_at = null, paused_by = null, pause_after = excluded.pause_after
   where q.paused or q.pause_after is distinct from excluded.pause_after;
  if not found then
    return false;
  end if;
  if v_was_paused is distinct from false then  -- it was paused or not queued: wake the workers
    perform pg_notify(queue_channel(), pause_job_after.job_id);
  end if;
  return true;
end
$$;
comment on function {{ .schema }}.pause_job_after(text, integer) is
$c$Canary: the fleet runs AFTER (1 to 10,000: a job's most chunks) more chunks of the job, then the pass that commits
the last of them pauses it in the same transaction (reason "paused after the chunks that
pause --after allowed"), so no further chunk starts until resume_job. A paused or idle job is
queued for those chunks (and queue_channel() notified); a queued one keeps its place. It
first waits for a chunk of the job in flight (lock waits bounded at 5 s): the count starts
after it. Only the fleet's passes count (chunks drain and run do not look at the queue).
pause_job or resume_job drop a pending canary. Returns true when it changed the queue, false
when the same canary was already pending.
Errors: 22023 bad job_id or AFTER; CH409 unknown or finished job, an undone job, or AFTER
not below the chunks left (the job would finish instead of pausing).$c$;

-- The signature of a router (the template is tenant_call.sql): the job of one tenant.
{{ template "common/tenant_call.sql" (merge (dict "name" "pause_job_after" "returns" "boolean" "volatility" "volatile" "missing" "conflict"
  "settings" (list "lock_timeout = '5s'")
  "args" (list "after integer")
  "comment" `the canary: AFTER more chunks, then paused.`) .) }}
