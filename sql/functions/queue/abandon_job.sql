-- Fleet mode: an operator ends an unfinished job for good (issue 38: "nothing
-- ends"). Its committed chunks stay, with their audit, and its undo still
-- works for them; its remaining targets are never run: run_chunk, resume
-- and pause refuse it (lock_unfinished_job), and it leaves the queue. A job
-- of a campaign that held a place in the queue gives it to the campaign's
-- next job, as a finished one does (campaign_job_done).
create or replace function {{ .schema }}.abandon_job_as(job_id text, reason text, proposer text) returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
#variable_conflict use_column
declare
  v_end job_ends;
  v_queued boolean;
  v_shape record;
  v_new boolean;
begin
  perform check_name(abandon_job_as.job_id, 'job_id');
  perform check_reason(abandon_job_as.reason, 'the job is abandoned');
  -- Locks in run_next_chunk's order: the queue row, then the job row (this
  -- waits for a chunk in flight).
  select true into v_queued from job_queue as q where q.job_id = abandon_job_as.job_id for update;
  select * into v_end from job_ends as e where e.job_id = abandon_job_as.job_id;
  v_new := not found;
  if v_new then
    perform lock_unfinished_job(abandon_job_as.job_id, 'abandon');
    -- A two-person job's abandon is proposed, and done when approved (approve).
    if abandon_job_as.proposer is null and is_two_person(abandon_job_as.job_id) then
      return propose_action(abandon_job_as.job_id, 'abandon', jsonb_build_object('reason', abandon_job_as.reason))
             || (select jsonb_build_object('abandoned', false, 'by', null, 'at', null, 'reason', abandon_job_as.reason,
                                           'next_index', s.next_index, 'targets', s.targets)
                   from job_shapes as s where s.job_id = abandon_job_as.job_id);
    end if;
    insert into job_ends (job_id, abandoned_by, reason)
    values (abandon_job_as.job_id, coalesce(abandon_job_as.proposer, session_user), abandon_job_as.reason)
    returning * into v_end;
    delete from job_queue as q where q.job_id = abandon_job_as.job_id;
    if v_queued then
      perform campaign_job_done(abandon_job_as.job_id);
    end if;
  end if;
  -- (the same decision again changes nothing, and says how the job ended)
  select s.next_index, s.targets into v_shape from job_shapes as s where s.job_id = abandon_job_as.job_id;
  return jsonb_build_object('job_id', v_end.job_id, 'abandoned', v_new, 'by', v_end.abandoned_by, 'at', v_end.abandoned_at,
                            'reason', v_end.reason, 'next_index', v_shape.next_index, 'targets', v_shape.targets);
end
$$;
comment on function {{ .schema }}.abandon_job_as(text, text, text) is
  'chunks helper: abandon_job''s body; PROPOSER NULL: abandon_job''s call (a two-person job''s abandon is proposed: propose_action), else approve''s, which records the abandon as PROPOSER''s.';

create or replace function {{ .schema }}.abandon_job(job_id text, reason text) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '5s'
as $$
begin
  return abandon_job_as(abandon_job.job_id, abandon_job.reason, null);
end
$$;
comment on function {{ .schema }}.abandon_job(text, text) is
$c$Ends the unfinished job JOB_ID for good, for REASON (1 to 500 characters): recorded in job_ends
with who (session_user) and when, in the transaction that takes it out of the queue. Its
committed chunks and their audit stay (report and undo answer for them); its remaining targets
are never run (run_chunk, resume_job, pause_job refuse it). A campaign's job that was in the
queue gives its place to the campaign's next job. Waits for a chunk in flight (lock waits
bounded at 5 s). Returns {"job_id", "abandoned" (false: it already was; nothing changed),
"by", "at", "reason", "next_index", "targets"}. A two-person job's abandon (docs/safety.md
"Two people") is proposed instead, and done when another role approves it (approve): then it
returns {"job_id", "abandoned": false, "by" and "at" null, "reason", "next_index", "targets",
"proposed": true, "action", "digest", "proposed_by", "proposed_at"}.
Errors: 22023 bad job_id or reason; CH409 unknown job, or a job that is already done.$c$;

-- The signature of a router (the template is tenant_call.sql): the job of one tenant.
{{ template "common/tenant_call.sql" (merge (dict "name" "abandon_job" "returns" "jsonb" "volatility" "volatile" "missing" "conflict"
  "args" (list "reason text")
  "settings" (list "lock_timeout = '5s'")
  "comment" `abandons it for good.`) .) }}
