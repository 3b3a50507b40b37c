-- Retires the declared change NAME (issue 38: "nothing ends") once every
-- job of it has ended (finished, abandoned or archived): its generated
-- functions are dropped, and its row stays, retired, with its definition
-- and digest, for the record and for its jobs' reports (by name and
-- digest). A new definition under the name is then a new version
-- (define_change); the same definition again is this version, live again.
-- Only the schema's owner may (SECURITY INVOKER, granted to nobody), as
-- define_change and drop_change.
create or replace function {{ .schema }}.retire_change(name text) returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_change changes;
  v_open bigint;
  v_jobs bigint;
begin
  perform check_change_owner('retire_change');
  perform check_change_name(retire_change.name, 'name');
  -- (define_change's lock: a define of this name waits for this, or this for it)
  perform pg_advisory_xact_lock(hashtext('{{ .schema }}.define_change'), hashtext(retire_change.name));
  select * into v_change from changes as c where c.name = retire_change.name and c.retired_at is null for update;
  if not found then
    raise exception 'change %: not defined (or already retired)', retire_change.name using errcode = 'CH409';
  end if;
  -- Every job of it ended: locked FOR SHARE, so none moves meanwhile.
  perform from jobs as j join job_change as jc on jc.job_id = j.job_id
   where jc.change = v_change.name and jc.digest = v_change.digest
     for share of j;
  select count(*), count(*) filter (where s.next_index < s.targets
                                      and not exists (select from job_ends as e where e.job_id = jc.job_id)
                                      and not exists (select from job_archive as a where a.job_id = jc.job_id))
    into v_jobs, v_open
    from job_change as jc
    join job_shapes as s on s.job_id = jc.job_id
   where jc.change = v_change.name and jc.digest = v_change.digest;
  if v_open > 0 then
    raise exception 'change %: % of it % not ended; a change is retired once every job of it is finished, abandoned or archived',
      v_change.name, v_open || case when v_open = 1 then ' job' else ' jobs' end, case when v_open = 1 then 'has' else 'have' end
      using errcode = 'CH409';
  end if;
  perform drop_change_functions(v_change.function_name);
  update changes as c set retired_at = now(), retired_by = session_user
   where c.name = v_change.name and c.digest = v_change.digest;
  return jsonb_build_object('name', v_change.name, 'digest', v_change.digest, 'jobs', v_jobs);
end
$$;
comment on function {{ .schema }}.retire_change(text) is
$c$Retires the declared change NAME, whose every job has ended (finished, abandoned by abandon_job,
or archived): its generated functions (apply_, restore_, preview_) are dropped, and its row in
changes stays with its definition and digest (retired_at, retired_by): its jobs' report, inspect and
verify still answer, by the definition they were approved under; they never run again, and have no
undo once retired. A new definition under the name is then a new version. Only the schema's owner
may (42501). Returns {"name", "digest", "jobs"}.
Errors: 22023 bad name; CH409 no such live change, or a job of it not ended.$c$;
