-- Undo (README "Safety"): an undone job is never given back to the fleet
-- (resume_job, pause_job_after): its undo restored what it had cancelled,
-- and running it further is a new business decision, a new job.
create or replace function {{ .schema }}.check_not_undone(job_id text, action text) returns void
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_undo text;
begin
  select k.job_id into v_undo from job_kind as k where k.undoes = check_not_undone.job_id;
  if found then
    raise exception 'job %: undone by %; nothing to % (register a new job to cancel its orders)',
      check_not_undone.job_id, v_undo, check_not_undone.action using errcode = 'CH409';
  end if;
end
$$;
comment on function {{ .schema }}.check_not_undone(text, text) is
  'chunks helper: raises CH409, naming ACTION, when job JOB_ID has been undone (register_undo): it is not given back to the fleet.';
