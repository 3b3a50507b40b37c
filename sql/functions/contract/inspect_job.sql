create or replace function {{ .schema }}.inspect_job(job_id text) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_job jsonb;
begin
  perform check_name(inspect_job.job_id, 'job_id');
  -- A job of a declared change (register_change) names its change too.
  select jsonb_build_object('job_id', j.job_id, 'tenant', j.tenant,
                            'targets', case when s.in_rows then job_targets(j.job_id) else j.targets end,
                            'chunk_size', s.chunk_size, 'next_index', j.next_index)
         || case when jc.job_id is not null then jsonb_build_object('change', jc.change) else '{}' end
    into v_job
    from jobs as j
    join job_shapes as s on s.job_id = j.job_id
    left join job_change as jc on jc.job_id = j.job_id
   where j.job_id = inspect_job.job_id;
  return v_job;
end
$$;
comment on function {{ .schema }}.inspect_job(text) is
$c$The stored job as {"job_id", "tenant", "targets", "chunk_size", "next_index"}, or NULL when unknown;
a job of a declared change (register_change) adds "change", its name, and its targets are objects of the change's fields.
Read-only. Errors: 22023 when JOB_ID is not 1 to 64 ASCII letters, digits, _ or -.$c$;

-- The signature of a router (the template is tenant_call.sql): the job of one tenant.
{{ template "common/tenant_call.sql" (merge (dict "name" "inspect_job" "returns" "jsonb" "volatility" "stable" "missing" "null"
  "comment" `the stored job, or NULL.`) .) }}
