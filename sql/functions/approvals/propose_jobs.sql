-- Two people: the new jobs JOB_IDS of CHANGE (NULL: orders), just
-- recorded, are proposed by session_user when the policy says so or when
-- FORCED (the undo of a two-person job is a new plan and is approved as
-- one). A proposed job's chunks do not run (run_chunk, run_next_chunk)
-- until approve. Returns how many were proposed.
create or replace function {{ .schema }}.propose_jobs(job_ids text[], change text, forced boolean) returns integer
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_n integer;
begin
  if not (propose_jobs.forced or two_person_policy(propose_jobs.change)) then
    return 0;
  end if;
  insert into proposals (job_id, action, digest, proposed_by)
  select j.job_id, 'run', job_digest(j.job_id), session_user
    from unnest(propose_jobs.job_ids) as j(job_id);
  get diagnostics v_n = row_count;
  return v_n;
end
$$;
comment on function {{ .schema }}.propose_jobs(text[], text, boolean) is
  'chunks helper (register, register_change, register_undo, campaign_create, campaign_create_change): records the new jobs JOB_IDS of CHANGE as proposed by session_user (proposals, action run, their job_digest) when two_person_policy(CHANGE) or FORCED; returns how many.';

-- Whether job JOB_ID is two-person (it was proposed), for the operations
-- that are proposed in turn (skip_target, abandon_job, register_undo).
create or replace function {{ .schema }}.is_two_person(job_id text) returns boolean
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select exists (select from proposals as p where p.job_id = is_two_person.job_id and p.action = 'run')
$$;
comment on function {{ .schema }}.is_two_person(text) is
  'chunks helper: true when job JOB_ID was proposed (a run proposal in proposals): its skips, abandon and undo need an approval too.';

-- A skip or an abandon of a two-person job, proposed instead of done: its
-- digest is the sha256 of what it does (ACTION, DETAIL) and of the job's
-- approval digest. The same proposal again returns the waiting one.
create or replace function {{ .schema }}.propose_action(job_id text, action text, detail jsonb) returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_digest text := encode(sha256(convert_to(jsonb_build_object('job_id', propose_action.job_id, 'action', propose_action.action,
                                                               'detail', propose_action.detail,
                                                               'job_digest', job_digest(propose_action.job_id))::text, 'UTF8')), 'hex');
  v_p proposals;
begin
  select * into v_p from proposals as p
   where p.job_id = propose_action.job_id and p.digest = v_digest and p.approved_at is null;
  if not found then
    insert into proposals (job_id, action, detail, digest, proposed_by)
    values (propose_action.job_id, propose_action.action, propose_action.detail, v_digest, session_user)
    returning * into v_p;
  end if;
  return jsonb_build_object('job_id', v_p.job_id, 'proposed', true, 'action', v_p.action, 'digest', v_p.digest,
                            'proposed_by', v_p.proposed_by, 'proposed_at', v_p.proposed_at);
end
$$;
comment on function {{ .schema }}.propose_action(text, text, jsonb) is
  'chunks helper (skip_target, abandon_job): records ACTION (skip, abandon) of the two-person job JOB_ID with DETAIL as proposed by session_user, its digest the sha256 of {"job_id", "action", "detail", "job_digest"}; the same one again returns the waiting proposal. Returns {"job_id", "proposed": true, "action", "digest", "proposed_by", "proposed_at"}.';
