create or replace function {{ .schema }}.register(plan jsonb) returns boolean
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
as $$
begin
  -- 22023 naming the field, before anything is written; then register_job,
  -- which register_change shares.
  return register_job(null, null, valid_plan(register.plan));
end
$$;
comment on function {{ .schema }}.register(jsonb) is
$c$Records an approved job; returns true when new, false when the same approval is already there.
PLAN is {"job_id", "tenant", "targets": [{"id", "revision", "qty"}, ...], "chunk_size": 1..10,
"allow_partial": true}; targets are stored sorted by id with next_index 0.
A new job's approval is recorded in job_approval (run_chunk and report refuse the job when
its row no longer matches it). A new job also joins the fleet's queue (job_queue), visible at once, and queue_channel() is
notified with its id, in the same transaction.
The same job_id with the same tenant, targets and chunk_size changes nothing (false);
with anything different, when the id is an undo (register_undo), or when its job row was
written by hand (no approval record), it is CH409. Progress
is never reset. check_plan answers, without writing, what register would do.
Errors: 22023 bad input (names the field); CH409 a different job under this id.$c$;
