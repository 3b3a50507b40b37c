-- Fleet mode: the queue that many worker processes share (README "Fleet
-- mode"). One row per runnable job, scored by visible_at: in the past means
-- queued, in the future means leased (leased_by set) or resting (a --rate
-- delay). receipt is the lease a claim took, from job_queue_receipt; a
-- release only acts while the row still carries it. A paused row is never
-- claimed. The job row lock inside run_chunk stays the fence: whatever this
-- table says, a chunk is applied at most once.
-- IF NOT EXISTS everywhere, like 001, so a schema that already holds these
-- objects installs as it is.
create table if not exists {{ .schema }}.job_queue(
  job_id text primary key references {{ .schema }}.jobs(job_id) on delete cascade,
  visible_at timestamptz not null,
  receipt bigint not null default 0,
  leased_by text,
  paused boolean not null default false
);

-- claim_job's scan: the next visible, unpaused row in (visible_at, job_id) order.
create index if not exists job_queue_visible_at on {{ .schema }}.job_queue (visible_at, job_id) where not paused;

create sequence if not exists {{ .schema }}.job_queue_receipt as bigint;

-- An upgrade keeps every unfinished job runnable: it joins the queue, visible
-- now. A finished job (next_index = number of targets) is never queued.
insert into {{ .schema }}.job_queue (job_id, visible_at)
select j.job_id, now()
  from {{ .schema }}.jobs as j
 where jsonb_typeof(j.targets) = 'array' and j.next_index < jsonb_array_length(j.targets)
on conflict (job_id) do nothing;
