-- report's checks for a job of orders, in the contract's words: a stored
-- job whose targets or next_index cannot be read as a list of approvals
-- and a prefix of it is not reported on, nor one that is no longer its
-- registered approval ("matching" would be measured against targets
-- nobody approved), nor one whose audit is not exactly targets[0:next_index]
-- (report judges each committed target by its audit row): CH409, in
-- job_problem's words. Returns orders_change().
create or replace function {{ .schema }}.orders_report_job(job_id text) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_targets jsonb;
  v_next_index integer;
  v_approval_problem text;
  v_problem text;
begin
  select j.targets, j.next_index,
         approval_problem(j.job_id, coalesce(k.kind, 'cancel'), j.tenant, j.targets, j.chunk_size,
                          ap.kind, ap.tenant, ap.targets_sha256, ap.chunk_size)
    into v_targets, v_next_index, v_approval_problem
    from jobs as j
    left join job_kind as k on k.job_id = j.job_id
    left join job_approval as ap on ap.job_id = j.job_id
   where j.job_id = orders_report_job.job_id;
  if not found then
    raise exception 'job %: not found', orders_report_job.job_id using errcode = 'CH409';
  end if;
  if not (targets_look_normal(v_targets) and v_next_index <= jsonb_array_length(v_targets)) then
    raise exception 'job %: %', orders_report_job.job_id,
      case when targets_look_normal(v_targets)
           then format('next_index %s is beyond the %s targets', v_next_index, jsonb_array_length(v_targets))
           else coalesce(job_problem(orders_report_job.job_id, v_targets, v_next_index), 'the stored job is not sound')
      end using errcode = 'CH409';
  end if;
  if v_approval_problem is not null then
    raise exception '%', v_approval_problem using errcode = 'CH409';
  end if;
  -- Its audit must be exactly targets[0:next_index] (docs/contract.md §4):
  -- each committed target is judged by its audit row.
  v_problem := job_problem(orders_report_job.job_id, v_targets, v_next_index);
  if v_problem is not null then
    raise exception 'job %: %', orders_report_job.job_id, v_problem using errcode = 'CH409';
  end if;
  return orders_change();
end
$$;
comment on function {{ .schema }}.orders_report_job(text) is
  'chunks helper (change_report_job): report''s checks of a job of orders in the contract''s words (CH409: not found, targets or next_index unreadable, not its approval, an audit that is not targets[0:next_index]); returns orders_change().';

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
unknown job, a stored job whose targets or next_index cannot be read, or one that is no longer
the approval register recorded (job_approval) or was never registered through chunks.
A job of a declared change (register_change) lists its targets' keys instead, in key order
(report_change: matching when the row still has every value the change wrote).$c$;

-- The signature of a router (the template is tenant_call.sql): the job of one tenant.
{{ template "common/tenant_call.sql" (merge (dict "name" "report" "returns" "jsonb" "volatility" "stable" "missing" "conflict"
  "comment" `the report, read in one SELECT; changes nothing.`) .) }}
