-- Why the orders' UPDATE of change_orders (or of run_chunk) changed only
-- CHANGED of IDS: the others are locked in ascending id order and compared
-- with their approval (order_problem); CH409 names the first id that does
-- not match, in order_problem's words, and the caller's statement, failing,
-- undoes the rows already changed. Always raises.
create or replace function {{ .schema }}.change_orders_refused(tenant text, ids integer[], revisions integer[], qtys integer[],
                                                               kind text, changed integer[])
returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
set enable_seqscan = off
set enable_bitmapscan = off
as $$
declare
  v_problem text;
begin
  with locked as materialized (
    select o.id, o.tenant, o.qty, o.state, o.revision
      from orders as o
     where o.id = any (change_orders_refused.ids) and o.id <> all (coalesce(change_orders_refused.changed, '{}'))
     order by o.id
       for update
  )
  select s.problem into v_problem
    from (select a.id,
                 order_problem(a.id, a.revision, a.qty, change_orders_refused.tenant, state_before(change_orders_refused.kind),
                               l.id, l.tenant, l.state, l.revision, l.qty) as problem
            from unnest(change_orders_refused.ids, change_orders_refused.revisions, change_orders_refused.qtys) as a(id, revision, qty)
            left join locked as l on l.id = a.id
           where a.id <> all (coalesce(change_orders_refused.changed, '{}'))) as s
   where s.problem is not null
   order by s.id
   limit 1;
  -- No problem left: a row changed between the UPDATE and this look, so
  -- that it matches now. Never passes silently.
  raise exception '%', coalesce(v_problem, format('changed %s of %s orders', coalesce(cardinality(change_orders_refused.changed), 0),
                                                   cardinality(change_orders_refused.ids)))
    using errcode = 'CH409';
end
$$;
comment on function {{ .schema }}.change_orders_refused(text, integer[], integer[], integer[], text, integer[]) is
  'chunks helper: raises CH409 naming the first of IDS (not in CHANGED, locked in ascending id order) that does not match its approval (order_problem), or how many of IDS changed.';
