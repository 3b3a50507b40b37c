-- Two people: the digest an approver approves, in one place. It is the
-- sha256 of one canonical jsonb text (jsonb prints one text per value) of
-- everything that fixes what a job will do: its id, kind, tenant, chunk
-- size, the sha256 of its normalized targets (job_approval's), and its
-- declared change with the definition's digest (none for orders).
create or replace function {{ .schema }}.approval_digest(job_id text, kind text, tenant text, chunk_size integer,
                                                         targets_sha256 text, change text, change_digest text) returns text
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select encode(sha256(convert_to(jsonb_build_object('job_id', job_id, 'kind', kind, 'tenant', tenant, 'chunk_size', chunk_size,
                                                     'targets_sha256', targets_sha256, 'change', change,
                                                     'change_digest', change_digest)::text, 'UTF8')), 'hex')
$$;
comment on function {{ .schema }}.approval_digest(text, text, text, integer, text, text, text) is
  'chunks helper: the approval digest of a job: sha256 (hex) of the jsonb text of {"job_id", "kind", "tenant", "chunk_size", "targets_sha256", "change", "change_digest"}.';

create or replace function {{ .schema }}.job_digest(job_id text) returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select approval_digest(a.job_id, a.kind, a.tenant, a.chunk_size, a.targets_sha256, jc.change, jc.digest)
    from job_approval as a
    left join job_change as jc on jc.job_id = a.job_id
   where a.job_id = job_digest.job_id
$$;
comment on function {{ .schema }}.job_digest(text) is
  'chunks helper: the approval digest (approval_digest) of the registered job JOB_ID, from what register recorded (job_approval, job_change); NULL for an unknown job.';

-- What chunks plan prints and approve takes, before anything is written.
create or replace function {{ .schema }}.plan_digest(change text, plan jsonb) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_name text;
  v_digest text;
  v_plan jsonb;
begin
  if plan_digest.change is null then
    v_plan := valid_plan(plan_digest.plan);  -- 22023 naming the field
  else
    select p.name, p.digest, p.approval into v_name, v_digest, v_plan from valid_change_plan(plan_digest.change, plan_digest.plan) as p;
  end if;
  return jsonb_build_object(
    'plan', v_plan - 'allow_partial',
    'change', v_name, 'change_digest', v_digest,
    'digest', approval_digest(v_plan ->> 'job_id', case when plan_digest.change is null then 'cancel' else 'change' end,
                              v_plan ->> 'tenant', (v_plan -> 'chunk_size')::integer, targets_sha256(v_plan -> 'targets'),
                              v_name, v_digest),
    'two_person', two_person_policy(v_name));
end
$$;
comment on function {{ .schema }}.plan_digest(text, jsonb) is
$c$What register (CHANGE NULL) or register_change would record of PLAN, read-only (chunks plan):
{"plan" (normalized: targets typed and sorted by key), "change", "change_digest", "digest"
(the approval digest approve takes, job_digest once registered), "two_person" (whether the
policy would make it a proposal)}. Errors: 22023 as register.$c$;
