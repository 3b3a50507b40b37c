-- Fleet mode: end one pass's lease.
create or replace function {{ .schema }}.release_job(job_id text, receipt bigint, done boolean, delay_ms integer)
returns boolean
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_n integer;
  v_next_index integer;
  v_paused boolean;
begin
  perform check_name(release_job.job_id, 'job_id');
  if release_job.receipt is null or release_job.receipt < 1 then
    raise exception 'receipt: must be a receipt from claim_job (1 or more), got %',
      coalesce(release_job.receipt::text, 'null') using errcode = '22023';
  end if;
  if release_job.done is null then
    raise exception 'done: must be true or false, got null' using errcode = '22023';
  end if;
  if release_job.delay_ms is null or release_job.delay_ms not between 0 and 86400000 then
    raise exception 'delay_ms: must be between 0 and 86400000 (a day), got %',
      coalesce(release_job.delay_ms::text, 'null') using errcode = '22023';
  end if;

  if release_job.done then
    -- Only a finished job leaves the queue: it is never queued again.
    select case when jsonb_typeof(j.targets) = 'array' then jsonb_array_length(j.targets) end, j.next_index
      into v_n, v_next_index
      from jobs as j
     where j.job_id = release_job.job_id;
    if not found then
      return false;
    end if;
    if v_n is null or v_next_index < v_n then
      raise exception 'done: job % is not finished (next_index % of %)', release_job.job_id, v_next_index,
        coalesce(v_n::text, 'unreadable targets') using errcode = '22023';
    end if;
    delete from job_queue as q where q.job_id = release_job.job_id and q.receipt = release_job.receipt;
    return found;
  end if;

  -- Back in the queue, behind every job that was already waiting (fair), or
  -- later by DELAY_MS. Only while the receipt still matches: otherwise the
  -- lease ran out and someone else claimed the job since, and this pass
  -- leaves their lease alone.
  update job_queue as q
     set visible_at = clock_timestamp() + release_job.delay_ms * interval '1 millisecond',
         leased_by = null
   where q.job_id = release_job.job_id and q.receipt = release_job.receipt
  returning q.paused into v_paused;
  if not found then
    return false;
  end if;
  if release_job.delay_ms = 0 and not v_paused then
    perform pg_notify(queue_channel(), release_job.job_id);
  end if;
  return true;
end
$$;
comment on function {{ .schema }}.release_job(text, bigint, boolean, integer) is
$c$Ends the lease that claim_job gave with RECEIPT, and returns true; returns false, changing
nothing, when the queue row no longer carries RECEIPT (the lease ran out and another worker
claimed the job) or is gone. DONE true removes a finished job from the queue (22023 if the
job is not finished). DONE false puts the job back: visible again after DELAY_MS milliseconds
(0: now, behind every job already waiting), not leased, still paused if it was paused; when
it is visible at once it NOTIFYs queue_channel() with the job id.
Errors: 22023 bad job_id, receipt (1 or more), done, or delay_ms (0 to 86400000).$c$;
