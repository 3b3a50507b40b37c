-- Fleet mode: what every job is doing, for chunks status.
create or replace function {{ .schema }}.job_status() returns jsonb
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  -- A chunk in flight holds its job's advisory lock (run_lock_key) until it
  -- commits: read once from pg_locks, with the backend's application_name
  -- (a worker sets its id there).
  with running as materialized (
    select (l.classid::bigint << 32) | l.objid::bigint as key, l.pid, a.application_name
      from pg_locks as l
      left join pg_stat_activity as a on a.pid = l.pid
     where l.locktype = 'advisory' and l.objsubid = 1 and l.granted
       and l.database = (select d.oid from pg_database as d where d.datname = current_database())
  )
  select coalesce(jsonb_agg(jsonb_build_object(
           'job_id', s.job_id,
           'tenant', s.tenant,
           'next_index', s.next_index,
           'n', s.n,
           'state', s.state,
           'running_in', case when s.state = 'running' then s.running_in end,
           'visible_at', case when s.state = 'queued' then s.visible_at end,
           'pause_reason', s.pause_reason,
           'paused_at', s.paused_at,
           'paused_by', s.paused_by,
           'pause_after', case when s.state in ('queued', 'running') then s.pause_after end,
           'kind', s.kind,
           'undoes', s.undoes,
           'undone_by', s.undone_by,
           'drift', s.drift) order by s.job_id), '[]'::jsonb)
    from (select j.job_id, j.tenant, j.next_index, c.n, q.visible_at, q.pause_reason, q.paused_at, q.paused_by,
                 q.pause_after, coalesce(k.kind, 'cancel') as kind, k.undoes, u.job_id as undone_by,
                 coalesce(nullif(r.application_name, ''), 'pid ' || r.pid) as running_in,
                 case
                   when c.n is not null and j.next_index >= c.n then 'done'
                   when r.pid is not null then 'running'
                   when q.paused then 'paused'
                   when q.job_id is null then 'idle'
                   else 'queued'
                 end as state,
                 -- report's rules: a committed target that is not matching
                 -- is drifted or missing. NULL when the stored targets or
                 -- next_index cannot be read (report refuses such a job).
                 case
                   when targets_look_normal(j.targets) and j.next_index <= c.n then
                     (select count(*)
                        from jsonb_array_elements(j.targets) with ordinality as x(e, ord)
                        left join orders as o on o.id = (x.e -> 'id')::bigint
                       where x.ord <= j.next_index
                         and (o.id is null
                              or not order_matches(o.tenant, o.qty, o.state, o.revision, j.tenant, (x.e -> 'revision')::bigint,
                                                   (x.e -> 'qty')::bigint, coalesce(k.kind, 'cancel'))))
                 end as drift
            from jobs as j
            left join job_queue as q on q.job_id = j.job_id
            left join job_kind as k on k.job_id = j.job_id
            left join job_kind as u on u.undoes = j.job_id
            left join running as r on r.key = run_lock_key(j.job_id)
           cross join lateral (select case when jsonb_typeof(j.targets) = 'array'
                                           then jsonb_array_length(j.targets) end as n) as c) as s
$$;
comment on function {{ .schema }}.job_status() is
$c$Every job with its fleet state, as a jsonb list ordered by job_id: [{"job_id", "tenant",
"next_index", "n", "state", "running_in", "visible_at", "pause_reason", "paused_at",
"paused_by", "pause_after", "kind", "undoes", "undone_by", "drift"}, ...]. state is done
(next_index = n), running (a chunk of it is in flight right now, in the session running_in:
a worker's id, or "pid N"), paused (no worker starts a chunk of it until resume_job;
pause_reason, paused_at and paused_by say why, when and by whom), idle (unfinished but not
queued: resume_job queues it) or queued (runnable from visible_at, which is later than now
while it rests after a --rate or retry delay).
pause_after, while queued or running, is how many more chunks the fleet runs before the job
pauses itself (pause_job_after), else NULL. kind is cancel (an ordinary job) or restore (an
undo, made by register_undo); undoes names the job an undo undoes, undone_by the undo of a
job (NULL when none). drift counts the committed orders that report() would call drifted or
missing (NULL when the stored job cannot be read). Read-only: it locks nothing.$c$;
