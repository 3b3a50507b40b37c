drop function if exists {{ .schema }}.orders_report_job(text);
create or replace function {{ .schema }}.report(job_id text) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
begin
  perform check_name(report.job_id, 'job_id');
  -- report's checks (change_report_job), then the lists by the rules of
  -- every change, of the job's change (orders_change() for orders).
  return report_lists(report.job_id, change_report_job(report.job_id));
end
$$;
comment on function {{ .schema }}.report(text) is
$c$What a job approved, committed and left, and how its committed orders look now.
Returns {"approved", "committed", "remaining", "matching", "drifted", "missing"}, each an
id-ordered list. A committed order is matching when it still has the job's tenant, the
approved qty, the state the job left it in ('cancelled'; 'pending' for an undo made by
register_undo) and the approved revision + 1; missing when no order has its id; drifted
otherwise. Read in one snapshot; changes nothing. Errors: 22023 bad job_id; CH409
unknown job, a stored job whose targets or next_index cannot be read or whose audit is not
exactly targets[0:next_index], or one that is no longer the approval register recorded
(job_approval) or was never registered through chunks.
A job of a declared change (register_change) lists its targets' keys instead, in key order, by
the same rule (report_lists: matching when the row still has every value the change wrote, the
version it left, the approved expect values and the job's tenant).$c$;

-- The signature of a router (the template is tenant_call.sql): the job of one tenant.
{{ template "common/tenant_call.sql" (merge (dict "name" "report" "returns" "jsonb" "volatility" "stable" "missing" "conflict"
  "comment" `the report, read in one SELECT; changes nothing.`) .) }}
