-- A campaign's progress over time, for its recent rate and ETA (issue 38:
-- the rate averaged since creation counted a preflight of minutes as part
-- of the run). record_progress, which every fleet worker calls with its
-- heartbeat, samples the campaigns of the jobs it was told about: how
-- many of their targets were committed then, at most one sample a
-- campaign every 5 seconds, kept for 15 minutes. Nothing else writes it;
-- it holds no approval and no audit, and losing it loses only rates.
create table if not exists {{ .schema }}.campaign_progress(
  campaign text not null references {{ .schema }}.campaigns(name) on delete cascade,
  at timestamptz not null,
  committed bigint not null check (committed >= 0),
  primary key (campaign, at)
);

-- Who may read campaigns (chunks grant: viewers and operators) may read
-- their progress too, as chunks grant now grants it.
do $$
declare
  v_role regrole;
begin
  for v_role in
    select distinct a.grantee::regrole
      from pg_class as c, aclexplode(c.relacl) as a
     where c.oid = '{{ .schema }}.campaigns'::regclass and a.privilege_type = 'SELECT'
       and a.grantee <> c.relowner and a.grantee <> 0
  loop
    execute format('grant select on {{ .schema }}.campaign_progress to %s', v_role);
  end loop;
end
$$;
