-- Fleet mode: a job's state, in one place for job_rows and status_page. A
-- plain SQL expression so the planner inlines it (no SET clause; its
-- callers pin search_path). A pause wins over a chunk in flight: the lock
-- that says "running" is one anybody's session could hold, the queue row is
-- chunks' own.
drop function if exists {{ .schema }}.job_state(integer, integer, boolean, boolean, boolean);
drop function if exists {{ .schema }}.job_state(integer, integer, boolean, boolean, boolean, boolean);
create or replace function {{ .schema }}.job_state(next_index integer, n integer, running boolean, queued boolean,
                                                   paused boolean, abandoned boolean, proposed boolean) returns text
language sql immutable parallel safe
as $$
  select case
           when n is not null and next_index >= n then 'done'
           when abandoned then 'abandoned'
           when proposed then 'proposed'
           when paused then 'paused'
           when running then 'running'
           when not queued then 'idle'
           else 'queued'
         end
$$;
comment on function {{ .schema }}.job_state(integer, integer, boolean, boolean, boolean, boolean, boolean) is
$c$chunks helper: a job's fleet state from its next_index, its number of targets N, whether a chunk of
it is in flight (RUNNING), whether it has a queue row (QUEUED), whether that row is PAUSED,
whether the job was ABANDONED and whether it is PROPOSED and not yet approved (two people):
done, abandoned, proposed, paused (even with a chunk in flight), running, idle (unfinished, no
queue row) or queued.$c$;
