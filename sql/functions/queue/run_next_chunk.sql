-- The end of a slice: the session lets its job go (SLICE_JOB NULL: no
-- slice, nothing to do).
create or replace function {{ .schema }}.slice_end(slice_job text) returns void
language sql volatile
set search_path = {{ .schema }}, pg_temp
as $$
  select case when slice_job is not null then pg_advisory_unlock(run_lock_key(slice_job)) end;
$$;
comment on function {{ .schema }}.slice_end(text) is
  'chunks helper (run_next_chunk): lets the session''s slice of job SLICE_JOB go (its run_lock_key, held by pg_advisory_lock); nothing for NULL.';

-- Fleet mode: one pass of a worker, in ONE transaction. The queue row
-- locked FOR UPDATE SKIP LOCKED is the claim: it holds for exactly as long
-- as the chunk runs and ends with this transaction, whatever happens to the
-- caller. The chunk itself is run_chunk, in a block of its own, so that its
-- failure rolls back the chunk only and the queue records why, in the same
-- commit.
--
-- enable_seqscan = off, as in run_chunk: a worker plans this once per
-- session, often while the queue is empty (a vacuumed empty job_queue plans
-- the head of the queue as a sequential scan and a sort, and every keyed
-- update as a sequential scan), and keeps that plan while thousands of jobs
-- come in. With it, the head of the queue is always the visible_at index.
--
-- Slices (docs/fleet.md "Slices"): a pass that asks to HOLD the job it ran
-- keeps it for its session (a session-level advisory lock on
-- run_lock_key), and the worker's next passes on the same connection ask
-- for that SLICE_JOB again, until the slice ends (a pass without HOLD, or
-- the job finished, paused, failed or not visible: the lock is let go in
-- the same pass). Other passes skip a job another session holds. The claim
-- is the session's, so a dead worker's job is free at once.
drop function if exists {{ .schema }}.run_next_chunk(text, integer, integer);
create or replace function {{ .schema }}.run_next_chunk(worker text, rate_delay_ms integer default 0,
                                                        retry_delay_ms integer default 1000,
                                                        max_rows integer default null,
                                                        slice_job text default null,
                                                        hold boolean default false) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set enable_seqscan = off
as $$
declare
  v_job_id text;
  v_result jsonb;
  v_sqlstate text;
  v_message text;
  v_paused boolean;
  v_pause_after integer;
begin
  if is_worker(run_next_chunk.worker) is not true then
    perform check_worker(run_next_chunk.worker); -- says why (is_worker is its inlined test)
  end if;
  if run_next_chunk.rate_delay_ms is null or run_next_chunk.rate_delay_ms not between 0 and 86400000 then
    raise exception 'rate_delay_ms: must be between 0 and 86400000 (a day), got %',
      coalesce(run_next_chunk.rate_delay_ms::text, 'null') using errcode = '22023';
  end if;
  if run_next_chunk.retry_delay_ms is null or run_next_chunk.retry_delay_ms not between 0 and 86400000 then
    raise exception 'retry_delay_ms: must be between 0 and 86400000 (a day), got %',
      coalesce(run_next_chunk.retry_delay_ms::text, 'null') using errcode = '22023';
  end if;

  if run_next_chunk.max_rows not between 1 and limit_of('change_chunk_size_max') then
    raise exception 'max_rows: must be between 1 and % (NULL: the approved chunk size), got %', limit_of('change_chunk_size_max'),
      run_next_chunk.max_rows using errcode = '22023';
  end if;

  if run_next_chunk.slice_job is not null then
    -- The slice goes on with its job, wherever it is in the queue, while it
    -- is runnable; else it ends here, and the job is let go.
    select q.job_id into v_job_id
      from job_queue as q
     where q.job_id = run_next_chunk.slice_job and not q.paused and q.visible_at <= now()
       for update skip locked;
    if not found then
      perform slice_end(run_next_chunk.slice_job);
      return null;
    end if;
  else
    -- SKIP LOCKED: concurrent passes never wait for each other on the queue's
    -- head; each takes a different job. Oldest visible_at first, so a job
    -- that just ran goes behind every job already waiting. A job in another
    -- session's slice is skipped (its run_lock_key is held).
    select q.job_id into v_job_id
      from job_queue as q
     where not q.paused and q.visible_at <= now()
       -- a proposed job waits for its approval in the queue (approve notifies)
       and not exists (select from proposals as p where p.job_id = q.job_id and p.action = 'run' and p.approved_at is null)
       and pg_try_advisory_xact_lock(run_lock_key(q.job_id))
     order by q.visible_at, q.job_id
     limit 1
       for update skip locked;
    if not found then
      return null;
    end if;
  end if;

  begin
    v_result := run_job_chunk(v_job_id, run_next_chunk.max_rows);
  exception
    when serialization_failure or deadlock_detected or lock_not_available or query_canceled
         or admin_shutdown or crash_shutdown or cannot_connect_now or connection_exception then
      -- Transient: a lock wait over 500 ms, a statement timeout or a
      -- cancel, a serialization failure or a deadlock, the server shutting
      -- down, a lost connection (class 08, e.g. of a trigger's dblink).
      -- The same chunk may well commit later: it is rolled back and the job
      -- rests. fleet.TransientChunkError is this list in Go.
      get stacked diagnostics v_sqlstate = returned_sqlstate, v_message = message_text;
      update job_queue as q
         set visible_at = clock_timestamp() + run_next_chunk.retry_delay_ms * interval '1 millisecond'
       where q.job_id = v_job_id;
      perform slice_end(run_next_chunk.slice_job);
      return jsonb_build_object('job_id', v_job_id, 'sqlstate', v_sqlstate, 'error', v_message,
                                'rest_ms', run_next_chunk.retry_delay_ms);
    when others or assert_failure then
      -- Anything else cannot get better by itself: a conflict (CH409), a
      -- queue row whose job no chunk can run (22023), and every other error
      -- of the chunk, such as an exception of a trigger on the user's table
      -- (P0001, P0004 from ASSERT, which OTHERS does not catch), a
      -- constraint, a privilege or a value out of range. The job is paused,
      -- with the reason, until a person looks (chunks status, report) and
      -- resumes it. A conflict's reason is its message; any other error's
      -- names its SQLSTATE too.
      get stacked diagnostics v_sqlstate = returned_sqlstate, v_message = message_text;
      update job_queue as q
         set paused = true, paused_at = clock_timestamp(), paused_by = run_next_chunk.worker, pause_after = null,
             pause_reason = case when v_sqlstate in ('CH409', '22023') then v_message
                                 else format('%s (SQLSTATE %s)', v_message, v_sqlstate) end
       where q.job_id = v_job_id;
      perform slice_end(run_next_chunk.slice_job);
      return jsonb_build_object('job_id', v_job_id, 'sqlstate', v_sqlstate, 'error', v_message, 'paused', true);
  end;

  -- A declared change's job says so (change_job): its chunk's size
  -- followed MAX_ROWS, and the worker's adaptive size counts it.
  if exists (select from change_jobs as cj where cj.job_id = v_job_id) then
    v_result := v_result || '{"change_job": true}'::jsonb;
  end if;
  if (v_result -> 'done')::boolean then
    delete from job_queue as q where q.job_id = v_job_id;  -- a finished job is never queued again
    perform campaign_job_done(v_job_id);  -- a campaign's next job takes its place (fairness window)
    perform slice_end(run_next_chunk.slice_job);
    return jsonb_build_object('job_id', v_job_id) || v_result;
  end if;
  -- A canary (pause_job_after) counts this chunk; the chunk that ends it
  -- pauses the job in this same commit, so the next one never starts
  -- before a person resumes it. A finished chunk that did nothing (a job
  -- drained elsewhere) is not counted: it is removed above.
  update job_queue as q
     set visible_at = clock_timestamp() + run_next_chunk.rate_delay_ms * interval '1 millisecond',
         pause_after = nullif(q.pause_after - 1, 0),
         paused = q.pause_after is not distinct from 1,
         pause_reason = case when q.pause_after = 1 then 'paused after the chunks that pause --after allowed' end,
         paused_at = case when q.pause_after = 1 then clock_timestamp() end,
         paused_by = case when q.pause_after = 1 then run_next_chunk.worker end
   where q.job_id = v_job_id
  returning q.paused, q.pause_after into v_paused, v_pause_after;
  -- The slice: held on (a new slice takes the session's lock; one going on
  -- has it), or ended.
  if run_next_chunk.hold and not v_paused then
    if run_next_chunk.slice_job is null then
      perform pg_advisory_lock(run_lock_key(v_job_id)); -- this transaction holds it already: no wait
    end if;
    v_result := v_result || '{"held": true}'::jsonb;
  else
    perform slice_end(run_next_chunk.slice_job);
  end if;
  return jsonb_build_object('job_id', v_job_id) || v_result
         || case when v_paused then jsonb_build_object('paused', true)
                 when v_pause_after is not null then jsonb_build_object('pause_after', v_pause_after)
                 else '{}'::jsonb end;
end
$$;
comment on function {{ .schema }}.run_next_chunk(text, integer, integer, integer, text, boolean) is
$c$One pass of a fleet worker, in one transaction: SELECT run_next_chunk('worker-1') in autocommit.
Takes the next runnable job of the queue (unpaused, visible_at reached, oldest first; FOR
UPDATE SKIP LOCKED, so concurrent passes take different jobs and a killed caller's claim ends
with its transaction), runs its next chunk with run_chunk, and in the same transaction
removes a finished job from the queue or puts it back behind every waiting job, visible after
RATE_DELAY_MS (0: at once). MAX_ROWS (1 to 1000; NULL: none) caps a declared change's chunk
below its approved chunk size: a worker's adaptive size (chunks worker --chunk-time); an orders
job's chunk is its chunk_size. HOLD keeps the job for the session after a chunk that leaves it
runnable ("held": true), and SLICE_JOB asks for that job again: a slice, whose last pass (HOLD
false) or whose job's end, pause, failure or invisibility lets it go; other passes skip a held job. When the finished job belongs to a campaign, the campaign's
next job joins the queue in the same transaction (campaign_job_done: a campaign holds at
most its queue_window rows of the queue). Returns {"job_id", "processed", "next_index", "done"} (and
"change_job": true for a job of a declared change), or NULL
when nothing is runnable. A pending canary (pause_job_after) counts the chunk: with
"pause_after" (the chunks still to run) while it lasts, and "paused": true from the pass whose
chunk ends it, which pauses the job in the same transaction.
A transient error of the chunk rolls the chunk back and rests the job RETRY_DELAY_MS:
{"job_id", "sqlstate", "error", "rest_ms"}. Transient are only 40001 serialization failure,
40P01 deadlock, 55P03 lock wait over 500 ms, 57014 statement timeout or cancel, 57P01, 57P02
and 57P03 (the server shutting down or restarting) and class 08 (a lost connection). Any other
error rolls the chunk back and pauses the job with the reason (pause_reason, paused_at,
paused_by = WORKER): {"job_id", "sqlstate", "error", "paused": true}. That is a conflict
(CH409), a job no chunk can run (22023), and every other error, such as a trigger's exception
(P0001); the reason is the message, and for an error that is not a conflict or 22023 its
SQLSTATE too: "message (SQLSTATE P0001)".
Errors: 22023 bad worker (1 to 63 printable ASCII characters) or delays
(0 to 86400000 ms).$c$;
