-- Fleet mode without leases (README "Fleet mode"). A worker's pass is now
-- one call of run_next_chunk in one transaction: the queue row it locks FOR
-- UPDATE SKIP LOCKED is its claim, and the claim ends with that transaction,
-- so a killed worker's job is free again at once. The lease columns, the
-- receipt sequence and claim_job/release_job go.
--
-- Every queued and paused job stays as it was. A job that was leased when
-- this runs becomes visible now (its lease meant nothing to the new pass);
-- one resting after a --rate or retry delay keeps its visible_at.
update {{ .schema }}.job_queue as q
   set visible_at = least(q.visible_at, now())
 where q.leased_by is not null;

alter table {{ .schema }}.job_queue
  drop column if exists receipt,
  drop column if exists leased_by;

drop function if exists {{ .schema }}.claim_job(text, integer);
drop function if exists {{ .schema }}.release_job(text, bigint, boolean, integer);
drop sequence if exists {{ .schema }}.job_queue_receipt;

-- Why a job is paused: the conflict that paused it (or "paused by an
-- operator"), when, and by whom (a worker id or the operator's role).
-- resume_job clears them.
alter table {{ .schema }}.job_queue
  add column if not exists pause_reason text,
  add column if not exists paused_at timestamptz,
  add column if not exists paused_by text;
