-- The change cancel_chunk and run_chunk apply, on input already proven
-- valid: lock the orders in ascending id order (so overlapping jobs cannot
-- deadlock), compare every row with its approval in the same statement
-- (order_problem), and only then update. KIND is the job's kind of change
-- (state_before -> state_after: cancel is pending -> cancelled, restore is
-- cancelled -> pending); either way the revision goes up by one. Any
-- mismatch raises CH409 naming the id; the statement's atomicity undoes
-- nothing because nothing was written yet.
-- enable_seqscan = off, as in run_chunk: a session's plan of the orders
-- lookup must not stay a sequential scan made while orders was nearly empty,
-- whichever caller planned it first.
create or replace function {{ .schema }}.change_orders(tenant text, ids integer[], revisions integer[], qtys integer[],
                                                       kind text)
returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
set enable_seqscan = off
as $$
declare
  v_problem text;
  v_count bigint;
begin
  with locked as materialized (
    select o.id, o.tenant, o.qty, o.state, o.revision
      from orders as o
     where o.id = any (change_orders.ids)
     order by o.id
       for update
  )
  select s.problem into v_problem
    from (select a.id,
                 order_problem(a.id, a.revision, a.qty, change_orders.tenant, state_before(change_orders.kind),
                               l.id, l.tenant, l.state, l.revision, l.qty) as problem
            from unnest(change_orders.ids, change_orders.revisions, change_orders.qtys) as a(id, revision, qty)
            left join locked as l on l.id = a.id) as s
   where s.problem is not null
   order by s.id
   limit 1;
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'CH409';
  end if;

  update orders as o
     set state = state_after(change_orders.kind), revision = o.revision + 1
    from unnest(change_orders.ids, change_orders.revisions, change_orders.qtys) as a(id, revision, qty)
   where o.id = a.id and o.tenant = change_orders.tenant and o.state = state_before(change_orders.kind)
     and o.revision = a.revision and o.qty = a.qty;
  get diagnostics v_count = row_count;
  if v_count <> cardinality(change_orders.ids) then
    -- Cannot happen while the rows are locked; checked so it can never pass silently.
    raise exception 'changed % of % orders', v_count, cardinality(change_orders.ids) using errcode = 'CH409';
  end if;
end
$$;
comment on function {{ .schema }}.change_orders(text, integer[], integer[], integer[], text) is
  'chunks helper: applies a job''s change of KIND (cancel: pending -> cancelled; restore: cancelled -> pending; revision + 1) to the given orders of TENANT, locked in ascending id order, all or none (CH409 naming the first id that does not match its approval).';
