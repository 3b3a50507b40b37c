-- Operator safety (README "Safety"): the kind of change a job applies, for
-- undo jobs, and the canary's countdown in the queue. The contract's three
-- tables keep exactly their columns.
--
-- job_kind: one row per job that is not an ordinary cancellation. A job
-- without a row is kind 'cancel' (pending -> cancelled), as every job
-- registered by register() and every job from before this version is. An
-- undo (register_undo) is kind 'restore' (cancelled -> pending) and names
-- the job it undoes; a job is undone at most once (unique). No cascade: a
-- job that an undo names cannot be deleted under it.
create table if not exists {{ .schema }}.job_kind(
  job_id text primary key references {{ .schema }}.jobs(job_id),
  kind text not null check (kind in ('cancel', 'restore')),
  undoes text unique references {{ .schema }}.jobs(job_id),
  check ((kind = 'restore') = (undoes is not null)),
  check (undoes <> job_id)
);

-- The canary (pause_job_after): how many more chunks the fleet runs of
-- this job before the pass that commits the last of them pauses it, in the
-- same transaction. NULL: no canary pending.
alter table {{ .schema }}.job_queue
  add column if not exists pause_after integer check (pause_after > 0);

-- Helpers whose argument lists changed: the code package installs the new
-- ones (change_orders, order_matches with the job's kind).
drop function if exists {{ .schema }}.cancel_orders(text, integer[], integer[], integer[]);
drop function if exists {{ .schema }}.order_matches(text, integer, text, integer, text, jsonb);
