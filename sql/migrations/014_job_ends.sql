-- How a job ended other than by finishing (issue 38: "nothing ends"):
-- abandoned by an operator, who, when and why. Its committed chunks stay,
-- with their audit, and can be undone; its remaining targets are never
-- run. One row a job, written once (abandon_job), in the transaction
-- that takes the job out of the queue.
create table if not exists {{ .schema }}.job_ends(
  job_id text primary key references {{ .schema }}.jobs(job_id),
  abandoned_by text not null,
  abandoned_at timestamptz not null default now(),
  reason text not null check (length(reason) between 1 and 500)
);

-- Who may read jobs (chunks grant: viewers and operators) may read how
-- they ended, as chunks grant now grants it.
do $$
declare
  v_role regrole;
begin
  for v_role in
    select distinct a.grantee::regrole
      from pg_class as c, aclexplode(c.relacl) as a
     where c.oid = '{{ .schema }}.jobs'::regclass and a.privilege_type = 'SELECT'
       and a.grantee <> c.relowner and a.grantee <> 0
  loop
    execute format('grant select on {{ .schema }}.job_ends to %s', v_role);
  end loop;
end
$$;
