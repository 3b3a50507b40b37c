-- Undo (README "Safety"): the compensating job of JOB_ID, built from its
-- committed part and registered as one approval, in one transaction. Its
-- targets are JOB_ID's committed orders that are still exactly as JOB_ID
-- left them (report's matching), each approved at the revision JOB_ID left
-- (approved + 1); it restores them, chunk by chunk, to pending with
-- revision + 1. Drifted and missing orders are listed and left alone. The
-- undo is a job like any other: kind 'restore' in job_kind, queued for the
-- fleet, run by run_chunk and reported by report with its own matching.
-- A job of a declared change follows the same rules, and its undo is built
-- by register_change_undo: a job of the same change, run by its inverse.
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
  v_targets jsonb;
  v_lists jsonb;
  v_created boolean := false;
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
  select j.job_id, j.tenant, j.targets, j.chunk_size, j.next_index, coalesce(k.kind, 'cancel') as kind, k.undoes,
         jc.change, jc.digest,
         approval_problem(j.job_id, case when jc.job_id is not null and k.kind is null then 'change' else coalesce(k.kind, 'cancel') end,
                          j.tenant, j.targets, j.chunk_size,
                          ap.kind, ap.tenant, ap.targets_sha256, ap.chunk_size) as approval_problem
    into v_job
    from jobs as j
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
  select j.job_id, k.undoes, j.targets into v_existing
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
    -- they must be sound (a change's job: register_change_undo checks its audit).
    if v_job.change is null then
      v_problem := coalesce(job_shape_problem(v_job.job_id, v_job.tenant, v_job.targets, v_job.chunk_size, v_job.next_index),
                            job_problem(v_job.job_id, v_job.targets, v_job.next_index));
    end if;
    if v_problem is not null then
      raise exception 'job %: %', v_job.job_id, v_problem using errcode = 'CH409';
    end if;
    -- ... and the approval its orders were changed under.
    if v_job.approval_problem is not null then
      raise exception '%', v_job.approval_problem using errcode = 'CH409';
    end if;
    if v_job.next_index < jsonb_array_length(v_job.targets) and v_paused is not true then
      raise exception 'job %: can still make progress (next_index % of %, not paused): pause it first (chunks pause %)',
        v_job.job_id, v_job.next_index, jsonb_array_length(v_job.targets), v_job.job_id using errcode = 'CH409';
    end if;
  end if;

  -- A job of a declared change: its own table, audit and inverse.
  if v_job.change is not null then
    return register_change_undo(v_job.job_id, v_new, v_job.tenant, v_job.targets, v_job.chunk_size, v_job.next_index,
                                v_job.change, v_job.digest, v_stored);
  end if;

  -- One SELECT reads the committed targets and their orders: each is
  -- restored (matching, or a target of the stored undo), drifted or missing.
  select jsonb_agg(jsonb_build_object('id', c.id, 'revision', c.revision + 1, 'qty', c.qty) order by c.id)
           filter (where c.status = 'restore'),
         jsonb_build_object(
           'targets', coalesce(jsonb_agg(c.id order by c.id) filter (where c.status = 'restore'), '[]'),
           'drifted', coalesce(jsonb_agg(c.id order by c.id) filter (where c.status = 'drifted'), '[]'),
           'missing', coalesce(jsonb_agg(c.id order by c.id) filter (where c.status = 'missing'), '[]'))
    into v_targets, v_lists
    from (select x.id, x.revision, x.qty,
                 case
                   when v_stored is not null and v_stored @> jsonb_build_array(jsonb_build_object('id', x.id)) then 'restore'
                   when o.id is null then 'missing'
                   when v_stored is null
                        and order_matches(o.tenant, o.qty, o.state, o.revision, v_job.tenant, x.revision, x.qty, v_job.kind)
                     then 'restore'
                   else 'drifted'
                 end as status
            from rows from (jsonb_to_recordset(v_job.targets) as (id bigint, qty bigint, revision bigint))
                 with ordinality as x(id, qty, revision, ord)
            left join orders as o on o.id = x.id
           where x.ord <= v_job.next_index) as c;

  if v_stored is null then
    if v_job.next_index = 0 then
      raise exception 'job %: nothing to undo: no chunk of it is committed', v_job.job_id using errcode = 'CH409';
    end if;
    if v_targets is null then
      raise exception 'job %: nothing to undo: none of its % committed orders is as it left it (drifted %, missing %)',
        v_job.job_id, v_job.next_index, v_lists -> 'drifted', v_lists -> 'missing' using errcode = 'CH409';
    end if;
    -- An order at the largest revision an integer holds cannot change again.
    select format('order %s: revision is %s, the largest an order can have: it cannot be restored', t.id, t.revision)
      into v_problem
      from jsonb_to_recordset(v_targets) as t(id bigint, revision bigint)
     where t.revision > limit_of('revision_max')
     order by t.id
     limit 1;
    if v_problem is not null then
      raise exception 'job %: %', v_job.job_id, v_problem using errcode = 'CH409';
    end if;
    insert into jobs (job_id, tenant, targets, chunk_size, next_index)
    values (v_new, v_job.tenant, v_targets, v_job.chunk_size, 0)
    on conflict do nothing;
    if not found then
      raise exception 'job %: already registered, and not as the undo of %', v_new, v_job.job_id using errcode = 'CH409';
    end if;
    insert into job_kind (job_id, kind, undoes) values (v_new, 'restore', v_job.job_id);
    insert into job_approval (job_id, kind, tenant, chunk_size, targets_sha256, recorded_from)
    values (v_new, 'restore', v_job.tenant, v_job.chunk_size, targets_sha256(v_targets), 'register_undo');
    -- Queued for the fleet like a registered job, in the same commit.
    insert into job_queue (job_id, visible_at) values (v_new, clock_timestamp());
    perform pg_notify(queue_channel(), v_new);
    v_created := true;
  end if;
  return jsonb_build_object('job_id', v_new, 'undoes', v_job.job_id, 'created', v_created) || v_lists;
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
(register_change_undo; change_audit), with version + 1; the lists hold the change's keys,
and the answer names the change ("change").
Errors: 22023 bad ids, or a default id that would not fit; CH409 an unknown job, an undo
(an undo is not undone), a job already undone by another id, NEW_JOB_ID taken by another
job, an unsound job or one that is no longer its registered approval (job_approval), a job that can still make progress (unfinished and not paused: pause
it first), or nothing to undo.$c$;

-- The signature of a router (the template is tenant_call.sql): the job of one tenant.
{{ template "common/tenant_call.sql" (merge (dict "name" "register_undo" "returns" "jsonb" "volatility" "volatile" "missing" "conflict"
  "settings" (list "lock_timeout = '5s'")
  "args" (list "new_job_id text")
  "comment" `registers its undo as a job of TENANT (NEW_JOB_ID NULL: JOB_ID-undo).`) .) }}
