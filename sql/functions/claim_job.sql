-- Fleet mode: take the next runnable job for one pass of a worker.
create or replace function {{ .schema }}.claim_job(worker text, lease_ms integer) returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_claim jsonb;
begin
  if claim_job.worker is null or length(claim_job.worker) not between 1 and 200
     or claim_job.worker ~ '[[:cntrl:]]' then
    raise exception 'worker: must be 1 to 200 characters without control characters, got %',
      coalesce(to_jsonb(claim_job.worker)::text, 'null') using errcode = '22023';
  end if;
  if claim_job.lease_ms is null or claim_job.lease_ms not between 1 and 86400000 then
    raise exception 'lease_ms: must be between 1 and 86400000 (a day), got %',
      coalesce(claim_job.lease_ms::text, 'null') using errcode = '22023';
  end if;
  -- SKIP LOCKED: concurrent claimers never wait for each other on the
  -- queue's head; each takes a different row. The lease is the row's new
  -- visible_at, and the receipt proves later that this claim still holds it.
  with next as (
    select q.job_id
      from job_queue as q
     where not q.paused and q.visible_at <= now()
     order by q.visible_at, q.job_id
     limit 1
       for update skip locked
  )
  update job_queue as q
     set visible_at = clock_timestamp() + claim_job.lease_ms * interval '1 millisecond',
         receipt = nextval('job_queue_receipt'),
         leased_by = claim_job.worker
    from next
   where q.job_id = next.job_id
  returning jsonb_build_object('job_id', q.job_id, 'receipt', q.receipt) into v_claim;
  return v_claim;
end
$$;
comment on function {{ .schema }}.claim_job(text, integer) is
$c$Claims the next runnable job for WORKER: the unpaused queue row with the smallest visible_at
(then job_id) that is visible now, skipping rows other sessions have locked (SKIP LOCKED).
It leases it for LEASE_MS milliseconds (visible_at = now + lease, leased_by = WORKER) with a
new receipt. Returns {"job_id", "receipt"}, or NULL when nothing is runnable. Run the chunk
with run_chunk, then call release_job with the receipt. A lease that runs out makes the job
visible again; run_chunk's job row lock still applies each chunk at most once.
Errors: 22023 bad worker (1 to 200 characters) or lease_ms (1 to 86400000).$c$;
