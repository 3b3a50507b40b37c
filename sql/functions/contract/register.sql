create or replace function {{ .schema }}.register(plan jsonb) returns boolean
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_plan jsonb := valid_plan(register.plan);  -- 22023 naming the field, before anything is written
  v_job_id text := v_plan ->> 'job_id';
  v_problem text;
begin
  -- A new job: its row, its approval and its place in the queue (record_job).
  if record_job(v_job_id, v_plan ->> 'tenant', v_plan -> 'targets', (v_plan -> 'chunk_size')::integer, 'cancel', 'register') then
    return true;
  end if;

  -- The id is taken: the same approval again is not an error, anything else is.
  -- Progress (next_index) is never touched here.
  select registration_problem(j.job_id, coalesce(k.kind, ap.kind, 'cancel'), k.undoes, j.tenant, j.targets, j.chunk_size, ap.job_id is not null,
                              v_plan ->> 'tenant', v_plan -> 'targets', (v_plan -> 'chunk_size')::integer)
    into v_problem
    from jobs as j
    left join job_kind as k on k.job_id = j.job_id
    left join job_approval as ap on ap.job_id = j.job_id
   where j.job_id = v_job_id;
  if not found then
    raise exception 'job %: was removed while registering', v_job_id using errcode = 'CH409';
  end if;
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'CH409';
  end if;
  return false;
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
