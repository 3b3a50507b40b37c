-- Fleet mode: one jsonb object per job, in job_id order, for job_status and
-- status_page: a page of at most MAX_JOBS jobs after AFTER_JOB_ID.
create or replace function {{ .schema }}.job_rows(after_job_id text, max_jobs integer) returns setof jsonb
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  with running as materialized (select * from running_chunks()),
  page as materialized (
    select j.job_id, j.tenant, j.next_index, j.chunk_size, j.targets as n, q.visible_at, q.pause_reason,
           q.paused_at, q.paused_by, q.pause_after,
           coalesce(k.kind, case when jc.job_id is not null then 'change' else 'cancel' end) as kind, jc.change,
           k.undoes, u.job_id as undone_by,
           coalesce(nullif(r.application_name, ''), 'pid ' || r.pid) as running_in,
           job_state(j.next_index, j.targets, r.pid is not null, q.job_id is not null, q.paused, e.job_id is not null,
                     pr.job_id is not null and pr.approved_at is null) as state,
           e.abandoned_by, e.abandoned_at, e.reason as abandon_reason,
           case when pr.job_id is not null
                then jsonb_build_object('proposed_by', pr.proposed_by, 'proposed_at', pr.proposed_at, 'approved_by', pr.approved_by,
                                        'approved_at', pr.approved_at, 'digest', pr.digest, 'signed', pr.signature is not null) end as approval,
           -- The recent rate in ids per second, from the oldest to the
           -- newest point of the job's progress row (record_progress).
           -- A row ahead of the job is of an older job of the same id.
           p.at as progressed_at,
           case when p.at > p.base_at
                then (p.next_index - p.base_next_index) / extract(epoch from p.at - p.base_at)::float8 end as rate
      from job_shapes as j
      left join job_queue as q on q.job_id = j.job_id
      left join job_kind as k on k.job_id = j.job_id
      left join job_kind as u on u.undoes = j.job_id
      left join job_change as jc on jc.job_id = j.job_id
      left join running as r on r.key = run_lock_key(j.job_id)
      left join job_progress as p on p.job_id = j.job_id and p.next_index <= j.next_index
      left join job_ends as e on e.job_id = j.job_id
      left join proposals as pr on pr.job_id = j.job_id and pr.action = 'run'
     where (job_rows.after_job_id is null or j.job_id > job_rows.after_job_id)
       -- an archived job (archive_jobs) is out of the default status
       and not exists (select from job_archive as ar where ar.job_id = j.job_id)
     order by j.job_id
     limit job_rows.max_jobs),
  -- report's rules (jobs_drift): how many committed targets are drifted or
  -- missing; NULL when report would refuse the job. Only for the page, one
  -- read of a table per change definition.
  drift as (select d.job_id, d.drift from jobs_drift(array(select p.job_id from page as p)) as d)
  select jsonb_build_object(
           'job_id', s.job_id,
           'tenant', s.tenant,
           'next_index', s.next_index,
           'n', s.n,
           'chunk_size', s.chunk_size,
           'state', s.state,
           'running_in', case when s.state = 'running' then s.running_in end,
           'visible_at', case when s.state = 'queued' then s.visible_at end,
           -- an abandoned job's: why, when and by whom it was abandoned
           -- a proposed job's: who proposed it (two people)
           'pause_reason', case when s.state = 'abandoned' then 'abandoned: ' || s.abandon_reason
                                when s.state = 'proposed' then format('proposed by %s, awaiting approval', s.approval ->> 'proposed_by')
                                else s.pause_reason end,
           'paused_at', case when s.state = 'abandoned' then s.abandoned_at else s.paused_at end,
           'paused_by', case when s.state = 'abandoned' then s.abandoned_by else s.paused_by end,
           'pause_after', case when s.state in ('queued', 'running') then s.pause_after end,
           'kind', s.kind,
           'change', s.change,
           'undoes', s.undoes,
           'undone_by', s.undone_by,
           'progressed_at', s.progressed_at,
           'rate', s.rate,
           'drift', d.drift,
           'approval', s.approval)
    from page as s
    left join drift as d on d.job_id = s.job_id
   order by s.job_id
$$;
comment on function {{ .schema }}.job_rows(text, integer) is
$c$The jobs after AFTER_JOB_ID (NULL: from the first), at most MAX_JOBS (NULL: all), in job_id order,
archived ones (archive_jobs) left out,
one jsonb object each: {"job_id", "tenant", "next_index", "n", "chunk_size", "state", "running_in",
"visible_at", "pause_reason", "paused_at", "paused_by", "pause_after", "kind", "change", "undoes", "undone_by",
"progressed_at", "rate", "drift", "approval"}, as job_status describes them. approval is a two-person job's
(docs/safety.md "Two people"): {"proposed_by", "proposed_at", "approved_by", "approved_at"
(null while it waits: state 'proposed', pause_reason "proposed by P, awaiting approval"),
"digest", "signed"}; NULL for a one-person job. progressed_at is when a fleet worker last saw the job move forward, and
rate its recent rate in ids per second (NULL until two points of progress are known); both come
from job_progress. An abandoned job (abandon_job) has state 'abandoned', and pause_reason
("abandoned: REASON"), paused_at and paused_by say why, when and by whom. kind is 'change' for a job of a declared change (register_change) and
'restore' for its undo, as for an orders job's; drift is report's, counted by jobs_drift;
change is that change's name (job_change), NULL for other jobs. Read-only: it locks nothing.$c$;
