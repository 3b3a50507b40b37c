-- An operator sets one approved target aside (issue 38: "one moved row
-- stalls its whole job"): target KEY of job JOB_ID, a declared change's
-- job, will not be changed, for REASON. The decision goes on the record
-- (job_skips: its ordinal and key, who, when, why, and what the change's
-- check says of its row now), on the job row locked as a chunk locks it,
-- so it lands between two chunks: the chunk that holds the target, and
-- every later one, pass over it (run_change_chunk), and the job's proof
-- takes the skip in place of the target's audit row (change_audit_problem).
-- The approval is untouched. Only a target not yet committed can be
-- skipped (a committed one is undone, not skipped). The queue is not
-- touched either: a job the fleet paused on the target stays paused until
-- an operator resumes it (campaign_skip resumes the jobs it skipped in).
create or replace function {{ .schema }}.skip_job_target(job_id text, key jsonb, reason text, proposer text) returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_job record;
  v_target record;
  v_skip job_skips;
  v_found text;
  v_new boolean;
  v_paused boolean;
begin
  perform check_name(skip_job_target.job_id, 'job_id');
  perform check_reason(skip_job_target.reason, 'the target is skipped');
  if skip_job_target.key is null or jsonb_typeof(skip_job_target.key) in ('null', 'array') then
    raise exception 'key: must be the target''s key (its value, or an object of a composite key''s columns), got %',
      coalesce(excerpt(skip_job_target.key::text, false), 'null') using errcode = '22023';
  end if;
  -- Locks in run_next_chunk's order: the queue row, then the job row (this
  -- waits for a chunk in flight, and no chunk starts until this commits).
  select q.paused into v_paused from job_queue as q where q.job_id = skip_job_target.job_id for update;
  perform lock_unfinished_job(skip_job_target.job_id, 'skip');
  perform from jobs as j where j.job_id = skip_job_target.job_id for update;
  select j.tenant, j.next_index, jc.change, c.definition, coalesce(k.kind, '') = 'restore' as restore
    into v_job
    from jobs as j
    left join job_change as jc on jc.job_id = j.job_id
    left join changes as c on c.name = jc.change and c.digest = jc.digest and c.retired_at is null
    left join job_kind as k on k.job_id = j.job_id
   where j.job_id = skip_job_target.job_id;
  if v_job.change is null then
    raise exception 'job %: a job of orders (the contract''s cancellation) has no skips: run_chunk proves every target before next_index by its audit row (docs/limits-and-decisions.md "Skips")',
      skip_job_target.job_id using errcode = 'CH409';
  end if;
  if v_job.definition is null then
    raise exception 'job %: its change % was redefined or dropped since it was approved', skip_job_target.job_id, v_job.change
      using errcode = 'CH409';
  end if;
  if jsonb_typeof(v_job.definition -> 'key') = 'array' and jsonb_typeof(skip_job_target.key) <> 'object' then
    raise exception 'key: change %''s key is (%): give an object of those columns, got %', v_job.change,
      (select string_agg(c, ', ') from jsonb_array_elements_text(v_job.definition -> 'key') as c),
      excerpt(skip_job_target.key::text, false) using errcode = '22023';
  end if;
  -- The target by its key, compared column by column as text (a one-column
  -- key's value may come as a JSON string or number).
  select t.ordinal, t.target into v_target
    from change_targets as t
   where t.job_id = skip_job_target.job_id
     and case when jsonb_typeof(v_job.definition -> 'key') = 'array'
              then not exists (select from jsonb_array_elements_text(v_job.definition -> 'key') as c
                                where t.target ->> c is distinct from skip_job_target.key ->> c)
                   and (select count(*) from jsonb_object_keys(skip_job_target.key)) = jsonb_array_length(v_job.definition -> 'key')
              else t.target ->> (v_job.definition ->> 'key') = skip_job_target.key #>> '{}' end;
  if not found then
    raise exception 'job %: no target has key %', skip_job_target.job_id, excerpt(skip_job_target.key::text, false) using errcode = 'CH409';
  end if;
  select * into v_skip from job_skips as s where s.job_id = skip_job_target.job_id and s.ordinal = v_target.ordinal;
  v_new := not found;
  if v_new then
    if v_target.ordinal < v_job.next_index then
      raise exception 'job %: target % was committed (next_index is %); a committed target is undone (chunks undo), not skipped',
        skip_job_target.job_id, excerpt(skip_job_target.key::text, false), v_job.next_index using errcode = 'CH409';
    end if;
    -- What the change's check says of its row now, in its chunk's words (NULL: it matches).
    -- A two-person job's skip is proposed, and done when approved (approve).
    if skip_job_target.proposer is null and is_two_person(skip_job_target.job_id) then
      return propose_action(skip_job_target.job_id, 'skip',
                            jsonb_build_object('key', change_key_of(v_job.definition, v_target.target), 'reason', skip_job_target.reason))
             || jsonb_build_object('key', change_key_of(v_job.definition, v_target.target), 'skipped', false, 'by', null, 'at', null,
                                   'reason', skip_job_target.reason, 'found', null, 'paused', coalesce(v_paused, false));
    end if;
    v_found := change_judge(v_job.definition, v_job.restore, v_job.tenant, jsonb_build_array(v_target.target)) -> 0 ->> 'problem';
    insert into job_skips (job_id, ordinal, key, reason, found, skipped_by)
    values (skip_job_target.job_id, v_target.ordinal, change_key_text(v_job.definition, v_target.target), skip_job_target.reason,
            v_found, coalesce(skip_job_target.proposer, session_user))
    returning * into v_skip;
  end if;
  -- (the same target again changes nothing, and says how it was skipped)
  return jsonb_build_object('job_id', skip_job_target.job_id, 'key', change_key_of(v_job.definition, v_target.target),
                            'skipped', v_new, 'by', v_skip.skipped_by, 'at', v_skip.skipped_at, 'reason', v_skip.reason,
                            'found', v_skip.found, 'paused', coalesce(v_paused, false));
end
$$;
comment on function {{ .schema }}.skip_job_target(text, jsonb, text, text) is
  'chunks helper: skip_target''s body; PROPOSER NULL: skip_target''s call (a two-person job''s skip is proposed: propose_action), else approve''s, which records the skip as PROPOSER''s.';

create or replace function {{ .schema }}.skip_target(job_id text, key jsonb, reason text) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '5s'
as $$
begin
  return skip_job_target(skip_target.job_id, skip_target.key, skip_target.reason, null);
end
$$;
comment on function {{ .schema }}.skip_target(text, jsonb, text) is
$c$Sets the target KEY (its key's value, or an object of a composite key's columns) of job
JOB_ID, a declared change's job, aside for REASON (1 to 500 characters): the job will never
change it. Recorded in job_skips with who (session_user), when, and what the change's check
says of its row now ("found"; NULL when it matches), on the job row locked as a chunk locks it;
the chunk that holds the target and every later one pass over it, and report lists it as
skipped. The approval is not changed. The queue is not touched: a paused job stays paused
(resume_job). Waits for a chunk in flight (lock waits bounded at 5 s). Returns {"job_id", "key",
"skipped" (false: it already was; nothing changed), "by", "at", "reason", "found", "paused"}.
A two-person job's skip (docs/safety.md "Two people") is proposed instead, and done when
another role approves it (approve): then it returns {"job_id", "key", "skipped": false, "by" and
"at" null, "reason", "found" null, "paused", "proposed": true, "action", "digest",
"proposed_by", "proposed_at"}.
Errors: 22023 bad job_id, key or reason; CH409 unknown, finished or abandoned job, a job of
orders, a change redefined since, no target with KEY, or a target already committed.$c$;

-- The signature of a router (the template is tenant_call.sql): the job of one tenant.
{{ template "common/tenant_call.sql" (merge (dict "name" "skip_target" "returns" "jsonb" "volatility" "volatile" "missing" "conflict"
  "args" (list "key jsonb" "reason text")
  "settings" (list "lock_timeout = '5s'")
  "comment" `sets one of its targets aside.`) .) }}
