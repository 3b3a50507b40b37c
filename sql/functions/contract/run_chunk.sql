-- Plans: every statement here is a lookup by key, planned once per session
-- (force_generic_plan: custom plans cost three times as much). A plan made
-- while a table was nearly empty (a new schema, the first job) would
-- otherwise stay a sequential scan for the life of the session while the
-- table grows: job_audit by job_id cost a chunk 2 to 5 ms after 30,000 audit
-- rows in a worker that had started on an empty schema. enable_seqscan = off
-- keeps the index whatever the statistics said then; it holds for the
-- functions and triggers this one calls, and for nothing after it returns.
-- enable_bitmapscan = off keeps the orders' UPDATE one probe per id, in
-- ascending id order (the lock order; see change_orders).
-- The body of run_chunk, for run_chunk and run_next_chunk: MAX_ROWS (a
-- worker's adaptive size, NULL: none) caps a declared change's chunk below
-- its approved chunk size; an orders job's chunk is its chunk_size, as the
-- contract says, whatever MAX_ROWS is.
create or replace function {{ .schema }}.run_job_chunk(job_id text, max_rows integer) returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '500ms'
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
as $$
declare
  v_job record;
  v_n integer;
  v_end integer;
  v_problem text;
  v_text text;
  v_bad bigint;
  v_audit_rows bigint;
  v_ids integer[];
  v_revisions integer[];
  v_qtys integer[];
  v_locking text; -- what a lock wait now would be for, to name it on a lock timeout
  v_changed integer[];
begin
  if is_name(run_job_chunk.job_id) is not true then
    perform check_name(run_job_chunk.job_id, 'job_id'); -- says why (is_name is its inlined test)
  end if;
  if run_job_chunk.max_rows < 1 then
    raise exception 'max_rows: must be 1 or more (NULL: the approved chunk size), got %', run_job_chunk.max_rows using errcode = '22023';
  end if;
  -- The job row lock is the fence: it is taken before the range is chosen, so
  -- two callers of one job run its chunks one after the other, never twice.
  v_locking := 'the job row (another transaction holds it: a chunk of this job in flight, or a session that locked it)';
  -- Its kind of change (job_kind: no row is an ordinary cancellation) and
  -- what register recorded of its approval (job_approval) come with it, in
  -- the same statement: two keyed lookups more.
  -- A declared change's job keeps its targets and chunk size in
  -- change_jobs (its targets are read by range, in run_change_chunk).
  select j.job_id, j.tenant, case when jc.job_id is null then j.targets end as targets, j.chunk_size, j.next_index,
         coalesce(k.kind, 'cancel') as kind, cj.targets as c_targets, cj.chunk_size as c_chunk_size,
         ap.kind as a_kind, ap.tenant as a_tenant, ap.targets_sha256 as a_targets_sha256, ap.chunk_size as a_chunk_size,
         jc.change, ch.function_name as change_function, ch.definition as change_definition,
         e.abandoned_by, e.abandoned_at, e.reason as abandon_reason, pr.proposed_by,
         -- Can its change run (run_change_chunk)? Its functions exist (migrate
         -- drops them when the change no longer fits its table) and its key is
         -- still unique on the table alone.
         case when ch.name is null then null
              -- (an undo's: restore_<name>, change_function_names)
              when not exists (select from pg_proc as p
                                where p.proname = case when k.kind = 'restore' then 'restore_' || ch.name else ch.function_name end
                                  and p.pronamespace = '{{ .schema }}'::regnamespace and p.pronargs = 4)
                then (select f from writer_function_problem(format('%I.%I(text, text, integer, jsonb)', '{{ .schema }}',
                                                                   case when k.kind = 'restore' then 'restore_' || ch.name else ch.function_name end)) as f)
              else (select kp from change_key_problem(ch.definition) as kp) end as change_problem
    into v_job
    from jobs as j
    left join job_kind as k on k.job_id = j.job_id
    left join job_approval as ap on ap.job_id = j.job_id
    left join job_change as jc on jc.job_id = j.job_id
    left join changes as ch on ch.name = jc.change and ch.digest = jc.digest and ch.retired_at is null
    left join change_jobs as cj on cj.job_id = j.job_id
    left join job_ends as e on e.job_id = j.job_id
    left join proposals as pr on pr.job_id = j.job_id and pr.action = 'run' and pr.approved_at is null
   where j.job_id = run_job_chunk.job_id
     for update of j;
  if not found then
    raise exception 'job %: not found', run_job_chunk.job_id using errcode = 'CH409';
  end if;
  -- An abandoned job's remaining targets are never run (abandon_job).
  if v_job.abandoned_by is not null then
    raise exception 'job %: abandoned by % at % (%); its remaining targets are never run', v_job.job_id, v_job.abandoned_by,
      v_job.abandoned_at, v_job.abandon_reason using errcode = 'CH409';
  end if;
  -- Two people: a proposed job runs once another role approved it (approve).
  if v_job.proposed_by is not null then
    raise exception 'job %: proposed by %, awaiting approval', v_job.job_id, v_job.proposed_by using errcode = 'CH409';
  end if;
  -- Seen by job_status as "running" until this transaction ends. Only this
  -- job's row lock holder takes it, so it never waits.
  perform pg_try_advisory_xact_lock(run_lock_key(v_job.job_id));

  -- A job of a declared change (register_change) takes its change's path.
  if v_job.change is not null then
    v_locking := 'a row of the change''s table, of change_audit or of jobs that this chunk writes';
    return run_change_chunk(v_job.job_id, v_job.tenant, v_job.c_targets, v_job.c_chunk_size, v_job.next_index,
                            v_job.change, v_job.change_function, v_job.change_definition, v_job.change_problem,
                            v_job.a_kind, v_job.a_tenant, v_job.a_chunk_size, v_job.kind, run_job_chunk.max_rows);
  end if;

  -- docs/contract.md §4: the stored job must be sound before anything is written.
  -- job_shape_problem is the fast guard on the row (targets' shape,
  -- tenant, chunk_size, next_index); the ranges and order of the targets
  -- are checked below with the audit. The targets' text is made once, for
  -- this and for the approval's sha256 (about 0.1 ms on 64 targets each time).
  v_text := v_job.targets::text;
  v_problem := job_text_shape_problem(v_job.job_id, v_job.tenant, v_job.targets, v_text, v_job.chunk_size,
                                      v_job.next_index);
  if v_problem is not null then
    raise exception 'job %: %', v_job.job_id, v_problem using errcode = 'CH409';
  end if;
  v_n := jsonb_array_length(v_job.targets);
  v_end := least(v_job.next_index + v_job.chunk_size, v_n);

  -- One statement checks every target's range and order and the audit
  -- (each of targets[0:next_index] present and equal, none after it), and
  -- picks out the range. It only answers "sound or not", cheaply;
  -- job_problem says what is wrong when it is not.
  select count(*) filter (where c.ok is not true),
         (select count(*) from job_audit as au where au.job_id = v_job.job_id),
         array_agg(c.id::integer order by c.pos) filter (where c.ok and c.pos >= v_job.next_index and c.pos < v_end),
         array_agg(c.revision::integer order by c.pos) filter (where c.ok and c.pos >= v_job.next_index and c.pos < v_end),
         array_agg(c.qty::integer order by c.pos) filter (where c.ok and c.pos >= v_job.next_index and c.pos < v_end)
    into v_bad, v_audit_rows, v_ids, v_revisions, v_qtys
    from (select t.pos, t.id, t.revision, t.qty,
                 target_in_range(t.id, t.revision, t.qty) and (t.prev is null or t.id > t.prev)
                 and case
                       when t.pos < v_job.next_index then
                         a.ordinal is not null and a.id = t.id and a.previous_revision = t.revision
                         and a.new_revision = t.revision + 1 and a.qty = t.qty
                       else a.ordinal is null
                     end as ok
            from (select (x.ord - 1)::integer as pos, x.id, x.revision, x.qty, lag(x.id) over (order by x.ord) as prev
                    from rows from (jsonb_to_recordset(v_job.targets) as (id bigint, qty bigint, revision bigint))
                         with ordinality as x(id, qty, revision, ord)) as t
            left join job_audit as a on a.job_id = v_job.job_id and a.ordinal = t.pos) as c;
  -- Every row of targets[0:next_index] is there, so any other count means extras.
  if v_bad > 0 or v_audit_rows <> v_job.next_index then
    raise exception 'job %: %', v_job.job_id,
      coalesce(job_problem(v_job.job_id, v_job.targets, v_job.next_index), 'the stored job is not sound')
      using errcode = 'CH409';
  end if;

  -- Sound is not enough: it must still be the approval that was registered
  -- (a rewrite into another sound list of targets would cancel orders
  -- nobody approved).
  v_problem := digest_approval_problem(v_job.job_id, v_job.kind, v_job.tenant, v_job.targets, targets_text_sha256(v_text),
                                       v_job.chunk_size, v_job.a_kind, v_job.a_tenant, v_job.a_targets_sha256,
                                       v_job.a_chunk_size);
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'CH409';
  end if;

  if v_job.next_index = v_n then
    return jsonb_build_object('processed', '[]'::jsonb, 'next_index', v_n, 'done', true);
  end if;

  -- The chunk's writes, in one statement: change_orders' UPDATE of the
  -- orders (see there: one probe per id, in ascending id order, each row
  -- locked by its update; enable_bitmapscan = off keeps it so), one audit
  -- row per order and the checkpoint: one statement where there were three
  -- (a plpgsql call of change_orders, an INSERT, an UPDATE), part of the
  -- fixed cost of a chunk (BENCHMARKS.md). The only lock it can wait for
  -- is an order's: the job row is this transaction's, so no other one
  -- writes the job's audit rows or its row. When fewer orders matched than the chunk has,
  -- change_orders_refused says why and the error undoes the statement.
  v_locking := null; -- an order of this chunk: the handler names them
  with changed as (                                                                  -- after-orders
    update orders as o
       set state = state_after(v_job.kind), revision = o.revision + 1
      from unnest(v_ids, v_revisions, v_qtys) as a(id, revision, qty)
     where o.id = a.id and o.tenant = v_job.tenant and o.state = state_before(v_job.kind)
       and o.revision = a.revision and o.qty = a.qty
    returning o.id
  ), audit as (                                                                      -- after-audit
    insert into job_audit (job_id, ordinal, id, previous_revision, new_revision, qty)
    select v_job.job_id, v_job.next_index + (a.i - 1)::integer, a.id, a.revision, a.revision + 1, a.qty
      from unnest(v_ids, v_revisions, v_qtys) with ordinality as a(id, revision, qty, i)
  ), moved as (                                                                      -- after-checkpoint
    update jobs as j set next_index = v_end where j.job_id = v_job.job_id
  )
  select array_agg(c.id) into v_changed from changed as c;
  if coalesce(cardinality(v_changed), 0) <> cardinality(v_ids) then
    perform change_orders_refused(v_job.tenant, v_ids, v_revisions, v_qtys, v_job.kind, v_changed);
  end if;
  return jsonb_build_object('processed', to_jsonb(v_ids), 'next_index', v_end, 'done', v_end = v_n);
exception
  -- The same SQLSTATE, saying which job and which lock. (The handler makes
  -- the body one subtransaction: its row locks and updates stay in it, so
  -- locking the job row and then updating it needs no MultiXact.)
  when lock_not_available then
    raise exception 'job %: lock timeout after %: waited for %', run_job_chunk.job_id,
      current_setting('lock_timeout'),
      coalesce(v_locking, format('an order of this chunk (another transaction holds a lock on one of the orders %s)',
                                 array_to_string(v_ids, ', ')))
      using errcode = 'lock_not_available';
end
$$;
comment on function {{ .schema }}.run_job_chunk(text, integer) is
  'chunks helper: run_chunk''s body (run_chunk, run_next_chunk): the next chunk of JOB_ID; MAX_ROWS (NULL: none) caps a declared change''s chunk below its approved chunk size (a worker''s adaptive size); an orders job''s chunk is its chunk_size.';

-- The contract's function, as a psql user sees it (\df+): PL/pgSQL, and
-- its lock waits bounded by its own setting.
create or replace function {{ .schema }}.run_chunk(job_id text) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '500ms'
as $$
begin
  return run_job_chunk(run_chunk.job_id, null);
end
$$;
comment on function {{ .schema }}.run_chunk(text) is
$c$Runs the next chunk of a job in the caller's transaction: one call, one chunk.
Locks the job row (FOR UPDATE; lock waits bounded at 500 ms by its body's own
lock_timeout, run_job_chunk), proves the stored job sound (valid sorted targets, 0 <= next_index <= n on a
chunk boundary, audit rows exactly targets[0:next_index]) and still the approval that register
recorded (job_approval: kind, tenant, chunk_size, the targets' sha256), changes the orders of
[next_index, next_index + chunk_size) by the job's kind (job_kind; an ordinary job cancels
them as cancel_chunk does, an undo made by register_undo restores cancelled orders to
pending; revision + 1 either way), writes one audit row each and moves next_index. Returns {"processed": [ids], "next_index": n, "done": bool};
a finished job returns {"processed": [], "done": true} and changes nothing.
A job of a declared change (register_change, job_change) runs its change's generated function
instead (run_change_chunk), with that job's own per-chunk proof (docs/contract.md "A declared
change's chunk"): "processed" then lists the targets' keys.
From psql in autocommit, SELECT run_chunk('job') is one transaction that commits one chunk.
Errors: 22023 bad job_id; CH409 unknown or unsound job, a job that is no longer its registered
approval or was never registered (no job_approval record), or an order that does not match;
55P03 lock timeout, naming the job and whether the job row or an order was locked.$c$;

-- The signature of a router (the template is tenant_call.sql): the job of one tenant.
{{ template "common/tenant_call.sql" (merge (dict "name" "run_chunk" "returns" "jsonb" "volatility" "volatile" "missing" "conflict"
  "comment" `runs its next chunk.`) .) }}
