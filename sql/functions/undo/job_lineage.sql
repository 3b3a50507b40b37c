-- Undo (README "Safety"): what kind of change a job applies, and how it is
-- tied to an undo, for chunks report.
create or replace function {{ .schema }}.job_lineage(job_id text) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_lineage jsonb;
begin
  perform check_name(job_lineage.job_id, 'job_id');
  -- An undo is kind restore, of orders or of a declared change (change).
  select jsonb_build_object('job_id', j.job_id, 'kind', coalesce(k.kind, case when jc.job_id is not null then 'change' else 'cancel' end),
                            'undoes', k.undoes, 'undone_by', u.job_id)
         || case when jc.job_id is not null then jsonb_build_object('change', jc.change) else '{}' end
    into v_lineage
    from jobs as j
    left join job_kind as k on k.job_id = j.job_id
    left join job_kind as u on u.undoes = j.job_id
    left join job_change as jc on jc.job_id = j.job_id
   where j.job_id = job_lineage.job_id;
  return v_lineage;
end
$$;
comment on function {{ .schema }}.job_lineage(text) is
$c$A job's kind and its undo, as {"job_id", "kind", "undoes", "undone_by"} (and "change" for a job
of a declared change or its undo), or NULL when unknown. kind is cancel (pending -> cancelled: a job made by register), change (a job of a
declared change, register_change) or restore (an undo made by register_undo: cancelled ->
pending, or a change's rows given their before values back); change is the declared change
of a change's job or of its undo; undoes is the job an undo undoes,
undone_by the undo of this job (NULL when none). Read-only. Errors: 22023 bad job_id.$c$;

-- The signature of a router (the template is tenant_call.sql): the job of one tenant.
{{ template "common/tenant_call.sql" (merge (dict "name" "job_lineage" "returns" "jsonb" "volatility" "stable" "missing" "null"
  "comment" `its kind and its undo, or NULL.`) .) }}
