-- The cancellation both cancel_chunk and run_chunk use, on input already
-- proven valid: lock the orders in ascending id order (so overlapping jobs
-- cannot deadlock), compare every row with its approval in the same
-- statement, and only then update. Any mismatch raises CH409 naming the id;
-- the statement's atomicity undoes nothing because nothing was written yet.
create or replace function {{ .schema }}.cancel_orders(tenant text, ids integer[], revisions integer[], qtys integer[])
returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_problem text;
  v_count bigint;
begin
  with locked as materialized (
    select o.id, o.tenant, o.qty, o.state, o.revision
      from orders as o
     where o.id = any (cancel_orders.ids)
     order by o.id
       for update
  )
  select s.problem into v_problem
    from (select a.id,
                 case
                   when l.id is null then format('order %s: missing', a.id)
                   when l.tenant <> cancel_orders.tenant then format('order %s: belongs to another tenant', a.id)
                   when l.state <> 'pending' then format('order %s: state is %s', a.id, l.state)
                   when l.revision <> a.revision then
                     format('order %s: revision is %s, approved %s', a.id, l.revision, a.revision)
                   when l.qty <> a.qty then format('order %s: qty is %s, approved %s', a.id, l.qty, a.qty)
                 end as problem
            from unnest(cancel_orders.ids, cancel_orders.revisions, cancel_orders.qtys) as a(id, revision, qty)
            left join locked as l on l.id = a.id) as s
   where s.problem is not null
   order by s.id
   limit 1;
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'CH409';
  end if;

  update orders as o
     set state = 'cancelled', revision = o.revision + 1
    from unnest(cancel_orders.ids, cancel_orders.revisions, cancel_orders.qtys) as a(id, revision, qty)
   where o.id = a.id and o.tenant = cancel_orders.tenant and o.state = 'pending'
     and o.revision = a.revision and o.qty = a.qty;
  get diagnostics v_count = row_count;
  if v_count <> cardinality(cancel_orders.ids) then
    -- Cannot happen while the rows are locked; checked so it can never pass silently.
    raise exception 'cancelled % of % orders', v_count, cardinality(cancel_orders.ids) using errcode = 'CH409';
  end if;
end
$$;
comment on function {{ .schema }}.cancel_orders(text, integer[], integer[], integer[]) is
  'chunks helper: cancels the given orders of TENANT, locked in ascending id order, all or none (CH409 naming the first id that does not match its approval).';
