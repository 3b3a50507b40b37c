-- Fleet mode: what every job is doing, for psql (chunks status and the
-- status page read status_page, which pages).
create or replace function {{ .schema }}.job_status() returns jsonb
language sql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
  select coalesce(jsonb_agg(r.job order by r.ord), '[]'::jsonb)
    from job_rows(null, null) with ordinality as r(job, ord)
$$;
comment on function {{ .schema }}.job_status() is
$c$Every job with its fleet state (but those archived: archive_jobs), as a jsonb list ordered by job_id: [{"job_id", "tenant",
"next_index", "n", "chunk_size", "state", "running_in", "visible_at", "pause_reason", "paused_at",
"paused_by", "pause_after", "kind", "change", "undoes", "undone_by", "progressed_at", "rate", "drift", "approval"}, ...].
state is done (next_index = n), proposed (two people: it waits for another role's approval,
approve; pause_reason says who proposed it; approval has the proposer, approver, when and the
digest of a two-person job, NULL for others), running (a
chunk of it is in flight right now, in the session running_in: a worker's id, or "pid N"; only
the lock of a session whose role may run chunks counts, see running_chunks), paused (no worker
starts a chunk of it until resume_job; pause_reason, paused_at and paused_by say why, when and by
whom; it wins over running), idle (unfinished but not queued: resume_job queues it) or queued (runnable
from visible_at, which is later than now while it rests after a --rate or retry delay).
pause_after, while queued or running, is how many more chunks the fleet runs before the job
pauses itself (pause_job_after). kind is cancel (an ordinary job) or restore (an undo, made by
register_undo) or change (a job of a declared change, register_change); change is the name of
the declared change of a change's job or its undo (NULL for other jobs); undoes names the job an undo undoes, undone_by the undo of a job.
progressed_at is when a fleet worker last saw the job move forward and rate its recent rate in
ids per second (NULL until known). drift counts the committed orders that report() would call
drifted or missing (NULL when the stored job cannot be read). Read-only: it locks nothing.$c$;
