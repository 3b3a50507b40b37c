-- Undo (README "Safety"): the compensating job of JOB_ID, built from its
-- committed part and registered as one approval, in one transaction. Its
-- targets are JOB_ID's committed orders that are still exactly as JOB_ID
-- left them (report's matching), each approved at the revision JOB_ID left
-- (approved + 1); it restores them, chunk by chunk, to pending with
-- revision + 1. Drifted and missing orders are listed and left alone. The
-- undo is a job like any other: kind 'restore' in job_kind, queued for the
-- fleet, run by run_chunk and reported by report with its own matching.
-- A job of a declared change follows the same rules: its undo is a job of
-- the same change, run by its inverse. register_undo_job builds either.
create or replace function {{ .schema }}.register_undo(job_id text, new_job_id text default null) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '5s'
as $$
declare
  v_suffix constant text := '-undo';
  v_new text := register_undo.new_job_id;
  v_job record;
  v_existing record;
  v_undone_by text;
  v_paused boolean;
  v_problem text;
  v_stored jsonb;
begin
  perform check_name(register_undo.job_id, 'job_id');
  if v_new is null then
    -- The default id: JOB_ID-undo, when that fits the 64-character limit.
    if length(register_undo.job_id) > limit_of('name_max_length') - length(v_suffix) then
      raise exception 'new_job_id: job % is % characters, too long to name its undo %-undo (at most %): give the undo''s id',
        register_undo.job_id, length(register_undo.job_id), register_undo.job_id, limit_of('name_max_length') using errcode = '22023';
    end if;
    v_new := register_undo.job_id || v_suffix;
  end if;
  perform check_name(v_new, 'new_job_id');
  if v_new = register_undo.job_id then
    raise exception 'new_job_id: must differ from job_id %', register_undo.job_id using errcode = '22023';
  end if;

  -- Locks in run_next_chunk's order: JOB_ID's queue row, then its job row
  -- (FOR UPDATE: this waits for a chunk of it in flight, and two undos of
  -- one job run one after the other).
  select q.paused into v_paused from job_queue as q where q.job_id = register_undo.job_id for update;
  select j.job_id, j.tenant, t.targets, s.chunk_size, j.next_index, coalesce(k.kind, 'cancel') as kind, k.undoes,
         jc.change, jc.digest,
         approval_problem(j.job_id, case when jc.job_id is not null and k.kind is null then 'change' else coalesce(k.kind, 'cancel') end,
                          j.tenant, t.targets, s.chunk_size,
                          ap.kind, ap.tenant, ap.targets_sha256, ap.chunk_size) as approval_problem
    into v_job
    from jobs as j
    join job_shapes as s on s.job_id = j.job_id
   cross join lateral (select job_targets(j.job_id) as targets) as t
    left join job_kind as k on k.job_id = j.job_id
    left join job_approval as ap on ap.job_id = j.job_id
    left join job_change as jc on jc.job_id = j.job_id
   where j.job_id = register_undo.job_id
     for update of j;
  if not found then
    raise exception 'job %: not found', register_undo.job_id using errcode = 'CH409';
  end if;
  if v_job.kind <> 'cancel' and v_job.change is not null then
    raise exception 'job %: is the undo of %; an undo is not undone (register a new job of change % to change those rows again)',
      v_job.job_id, v_job.undoes, v_job.change using errcode = 'CH409';
  end if;
  if v_job.kind <> 'cancel' then
    raise exception 'job %: is the undo of %; an undo is not undone (register a new job to cancel those orders again)',
      v_job.job_id, v_job.undoes using errcode = 'CH409';
  end if;

  -- register's rules: the same undo again changes nothing; NEW taken by
  -- anything else is a conflict. A job is undone once.
  select j.job_id, k.undoes, job_targets(j.job_id) as targets into v_existing
    from jobs as j
    left join job_kind as k on k.job_id = j.job_id
   where j.job_id = v_new;
  if found and v_existing.undoes is distinct from v_job.job_id then
    raise exception 'job %: already registered, and not as the undo of %', v_new, v_job.job_id using errcode = 'CH409';
  end if;
  if found then
    v_stored := v_existing.targets;
  else
    select k.job_id into v_undone_by from job_kind as k where k.undoes = v_job.job_id;
    if found then
      raise exception 'job %: already undone by %', v_job.job_id, v_undone_by using errcode = 'CH409';
    end if;
    -- CONTRACT §4: the undo is built from the job's audit and progress, so
    -- they must be sound.
    v_problem := case when v_job.change is null
                      then coalesce(job_shape_problem(v_job.job_id, v_job.tenant, v_job.targets, v_job.chunk_size, v_job.next_index),
                                    job_problem(v_job.job_id, v_job.targets, v_job.next_index))
                      -- (a change redefined since: register_undo_job says so)
                      else (select change_audit_problem(v_job.job_id, c.definition, v_job.targets, v_job.next_index)
                              from changes as c where c.name = v_job.change and c.digest = v_job.digest) end;
    if v_problem is not null then
      raise exception 'job %: %', v_job.job_id, v_problem using errcode = 'CH409';
    end if;
    -- ... and the approval its orders were changed under.
    if v_job.approval_problem is not null then
      raise exception '%', v_job.approval_problem using errcode = 'CH409';
    end if;
    if v_job.next_index < jsonb_array_length(v_job.targets) and v_paused is not true
       and not exists (select from job_ends as e where e.job_id = v_job.job_id) then  -- (abandoned: it never moves again)
      raise exception 'job %: can still make progress (next_index % of %, not paused): pause it first (chunks pause %)',
        v_job.job_id, v_job.next_index, jsonb_array_length(v_job.targets), v_job.job_id using errcode = 'CH409';
    end if;
  end if;

  -- The undo itself, for a job of any change (orders: change NULL).
  return register_undo_job(v_job.job_id, v_new, v_job.tenant, v_job.targets, v_job.chunk_size, v_job.next_index,
                           v_job.change, v_job.digest, v_stored);
end
$$;
comment on function {{ .schema }}.register_undo(text, text) is
$c$Registers the undo of job JOB_ID as job NEW_JOB_ID (NULL: JOB_ID-undo, when that fits 64
characters), in one transaction. Its targets are JOB_ID's committed orders that are still
exactly as JOB_ID left them (report's matching), approved at the revision JOB_ID left; it
restores each to state 'pending' with revision + 1, audited in job_audit, with JOB_ID's
chunk size. It is a job like any other (job_kind: kind 'restore', undoes JOB_ID): queued for
the fleet (and queue_channel() notified), run by run_chunk, drained, reported by report
(matching: pending, approved revision + 1). Drifted and missing orders are left alone.
Returns {"job_id", "undoes", "created", "targets", "drifted", "missing"}: created is false
when NEW_JOB_ID already is the undo of JOB_ID (nothing changes; the lists describe JOB_ID's
committed orders now). Lock waits are bounded at 5 s.
A job of a declared change (register_change) is undone by the same rules: its undo is a job of
the same change that restores the before values of its committed rows still as it left them
(register_undo_job; change_audit), with version + 1; the lists hold the change's keys,
and the answer names the change ("change").
Errors: 22023 bad ids, or a default id that would not fit; CH409 an unknown job, an undo
(an undo is not undone), a job already undone by another id, NEW_JOB_ID taken by another
job, an unsound job or one that is no longer its registered approval (job_approval), a job that can still make progress (unfinished, not paused
and not abandoned: pause it first), or nothing to undo.$c$;

-- The signature of a router (the template is tenant_call.sql): the job of one tenant.
{{ template "common/tenant_call.sql" (merge (dict "name" "register_undo" "returns" "jsonb" "volatility" "volatile" "missing" "conflict"
  "settings" (list "lock_timeout = '5s'")
  "args" (list "new_job_id text")
  "comment" `registers its undo as a job of TENANT (NEW_JOB_ID NULL: JOB_ID-undo).`) .) }}
