-- The router's shards: the partitions p0 ... pN-1 of its PL/Proxy cluster,
-- read from the foreign server's options, where chunks router install
-- wrote them. No password is there (the user mapping holds it), unless a DBA
-- wrote one there by hand: router.Shards masks it for output.
create or replace function {{ .schema }}.shards() returns jsonb
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  select coalesce(jsonb_agg(jsonb_build_object('shard', p.name, 'conninfo', p.conninfo) order by p.n), '[]'::jsonb)
    from (select split_part(o.opt, '=', 1) as name,
                 substr(o.opt, strpos(o.opt, '=') + 1) as conninfo,
                 substr(split_part(o.opt, '=', 1), 2)::integer as n
            from pg_foreign_server as s
           cross join lateral unnest(s.srvoptions) as o(opt)
           where s.srvname = '{{ .cluster }}'
             and o.opt ~ '^p[0-9]+=') as p
$$;
comment on function {{ .schema }}.shards() is
$c$The shards of this router, in partition order: [{"shard": "p0", "conninfo": "host=... dbname=..."}, ...],
from the options of the PL/Proxy cluster {{ .cluster }} (a foreign server). A tenant's shard is
shard_of(tenant). The connection strings hold no password: the user mapping does. Read-only.$c$;
