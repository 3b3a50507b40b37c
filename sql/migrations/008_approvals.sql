-- Least privilege (README "Roles"): every function an operator or a viewer
-- calls is SECURITY DEFINER from this version on, and no role but the
-- owner needs a privilege on a table of chunks. The contract's three tables
-- keep exactly their columns.
--
-- job_approval: what register (register_undo, campaign_create) recorded of
-- each job's approval, so that a stored job rewritten afterwards, even by
-- the owner, is refused (run_chunk, report) instead of run. The kind,
-- tenant and chunk_size are kept as they were; the targets as the sha256 of
-- their stored jsonb text (jsonb prints one canonical text per value).
-- A job without a row here was never registered through chunks. A deleted
-- job takes its approval with it (on delete cascade): a job row written
-- again by hand has none.
create table if not exists {{ .schema }}.job_approval(
  job_id text primary key references {{ .schema }}.jobs(job_id) on delete cascade,
  kind text not null check (kind in ('cancel', 'restore')),
  tenant text not null,
  chunk_size integer not null,
  targets_sha256 text not null check (targets_sha256 ~ '^[0-9a-f]{64}$'),
  recorded_at timestamptz not null default now(),
  recorded_by text not null default session_user,
  recorded_from text not null check (recorded_from in ('register', 'register_undo', 'campaign_create', 'migration'))
);

-- Jobs registered before this version get their approval from their rows
-- as they are now: there is nothing older to compare them with. (The digest
-- is targets_sha256's expression, written out: the functions are installed
-- after the migrations.)
do $$
declare
  v_count bigint;
begin
  insert into {{ .schema }}.job_approval (job_id, kind, tenant, chunk_size, targets_sha256, recorded_from)
  select j.job_id, coalesce(k.kind, 'cancel'), j.tenant, j.chunk_size,
         encode(sha256(convert_to(j.targets::text, 'UTF8')), 'hex'), 'migration'
    from {{ .schema }}.jobs as j
    left join {{ .schema }}.job_kind as k on k.job_id = j.job_id
   where not exists (select from {{ .schema }}.job_approval as a where a.job_id = j.job_id);
  get diagnostics v_count = row_count;
  if v_count > 0 then
    raise notice 'chunks: recorded the approval of % jobs registered before approvals were kept, from their rows as they are now (job_approval.recorded_from = ''migration''); chunks report JOB shows whether their orders still match', v_count;
  end if;
end
$$;

-- Until now every function was SECURITY INVOKER and executable by PUBLIC,
-- so whoever ran chunks did it through privileges on the tables. The
-- functions become SECURITY DEFINER and lose PUBLIC's EXECUTE when the code
-- package is installed after this migration. So that such a role goes on
-- doing what it could do (a fleet running during the upgrade included), and
-- nothing more, it is granted EXECUTE, and told so: a role that could write
-- jobs, job_audit or job_queue on every function that exists now; a role
-- that could only read them on the functions that read.
do $$
declare
  v_role record;
begin
  for v_role in
    select g.grantee::text as name, bool_or(g.privilege_type <> 'SELECT') as writes
      from information_schema.role_table_grants as g
      join pg_tables as t on t.schemaname = g.table_schema and t.tablename = g.table_name
     where g.table_schema = '{{ .schema }}'
       and g.table_name in ('jobs', 'job_audit', 'job_queue')
       and g.privilege_type in ('SELECT', 'INSERT', 'UPDATE', 'DELETE')
       and g.grantee::text not in ('PUBLIC', t.tableowner::text)
     group by 1
     order by 1
  loop
    if v_role.writes then
      execute format('grant execute on all functions in schema %I to %I', '{{ .schema }}', v_role.name);
      raise notice 'chunks: role % could write the tables of chunks; the functions are now SECURITY DEFINER and no longer executable by PUBLIC, so it was granted EXECUTE on every function chunks has (chunks grant --operator % grants exactly what an operator needs); it needs no table privilege any more, and revoking them keeps the audit and the approvals out of its reach', v_role.name, v_role.name;
    else
      execute format('grant execute on function %1$I.inspect_job(text), %1$I.report(text), %1$I.job_status(), '
                     '%1$I.status_page(text, integer), %1$I.worker_status(), %1$I.job_lineage(text), '
                     '%1$I.campaign_status(text), %1$I.campaign_report(text), %1$I.queue_channel() to %2$I',
                     '{{ .schema }}', v_role.name);
      raise notice 'chunks: role % could read the tables of chunks; the functions are now SECURITY DEFINER and no longer executable by PUBLIC, so it was granted EXECUTE on the functions that read (what chunks grant --viewer % grants)', v_role.name, v_role.name;
    end if;
  end loop;
end
$$;

-- Helpers whose argument lists changed: the code package installs the new
-- one (registration_problem with the job's approval).
drop function if exists {{ .schema }}.registration_problem(text, text, text, text, jsonb, integer, text, jsonb, integer);
