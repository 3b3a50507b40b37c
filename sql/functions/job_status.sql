-- Fleet mode: what every job is doing, for chunks status.
create or replace function {{ .schema }}.job_status() returns jsonb
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  select coalesce(jsonb_agg(jsonb_build_object(
           'job_id', s.job_id,
           'tenant', s.tenant,
           'next_index', s.next_index,
           'n', s.n,
           'state', s.state,
           'leased_by', case when s.state = 'leased' then s.leased_by end,
           'lease_until', case when s.state = 'leased' then s.visible_at end,
           'visible_at', case when s.state = 'queued' then s.visible_at end,
           'drift', s.drift) order by s.job_id), '[]'::jsonb)
    from (select j.job_id, j.tenant, j.next_index, c.n, q.leased_by, q.visible_at,
                 case
                   when c.n is not null and j.next_index >= c.n then 'done'
                   when q.paused then 'paused'
                   when q.job_id is null then 'idle'
                   when q.leased_by is not null and q.visible_at > now() then 'leased'
                   else 'queued'
                 end as state,
                 -- report's rules: a committed target that is not matching
                 -- is drifted or missing. NULL when the stored targets or
                 -- next_index cannot be read (report refuses such a job).
                 case
                   when targets_look_normal(j.targets) and j.next_index <= c.n then
                     (select count(*)
                        from jsonb_array_elements(j.targets) with ordinality as x(e, ord)
                        left join orders as o on o.id = (x.e -> 'id')::bigint
                       where x.ord <= j.next_index
                         and (o.id is null or not order_matches(o.tenant, o.qty, o.state, o.revision, j.tenant, x.e)))
                 end as drift
            from jobs as j
            left join job_queue as q on q.job_id = j.job_id
           cross join lateral (select case when jsonb_typeof(j.targets) = 'array'
                                           then jsonb_array_length(j.targets) end as n) as c) as s
$$;
comment on function {{ .schema }}.job_status() is
$c$Every job with its fleet state, as a jsonb list ordered by job_id: [{"job_id", "tenant",
"next_index", "n", "state", "leased_by", "lease_until", "visible_at", "drift"}, ...].
state is done (next_index = n), paused, idle (unfinished but not queued: resume_job queues
it), leased (a worker holds it until lease_until) or queued (claimable from visible_at).
drift counts the committed orders that report() would call drifted or missing (NULL when the
stored job cannot be read). Read-only.$c$;
