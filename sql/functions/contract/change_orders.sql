-- The change cancel_chunk and run_chunk apply, on input already proven
-- valid: one UPDATE whose WHERE is the approval (the job's tenant, the state
-- a job of KIND changes, the approved revision and qty) changes every order
-- that still matches, revision + 1 (state_before -> state_after: cancel is
-- pending -> cancelled, restore is cancelled -> pending). It locks each row
-- as it updates it, in ascending id order: IDS are sorted (the job's
-- targets are) and each id is one probe of the primary key (enable_seqscan
-- = off, enable_bitmapscan = off: no plan visits the rows in another order),
-- so overlapping jobs cannot deadlock, as with a FOR UPDATE in key order,
-- and each row gets one heap record instead of a lock record and an update.
-- Only when it changed fewer rows than IDS does it say why
-- (change_orders_refused). run_chunk runs the same UPDATE inside its one
-- write statement (with the audit rows and the checkpoint) and calls
-- change_orders_refused the same way.
-- enable_seqscan = off, as in run_chunk: a session's plan of the orders
-- lookup must not stay a sequential scan made while orders was nearly empty,
-- whichever caller planned it first.
create or replace function {{ .schema }}.change_orders(tenant text, ids integer[], revisions integer[], qtys integer[],
                                                       kind text)
returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
set enable_seqscan = off
set enable_bitmapscan = off
as $$
declare
  v_changed integer[];
begin
  with changed as (
    update orders as o
       set state = state_after(change_orders.kind), revision = o.revision + 1
      from unnest(change_orders.ids, change_orders.revisions, change_orders.qtys) as a(id, revision, qty)
     where o.id = a.id and o.tenant = change_orders.tenant and o.state = state_before(change_orders.kind)
       and o.revision = a.revision and o.qty = a.qty
    returning o.id
  )
  select array_agg(c.id) into v_changed from changed as c;
  if coalesce(cardinality(v_changed), 0) <> cardinality(change_orders.ids) then
    perform change_orders_refused(change_orders.tenant, change_orders.ids, change_orders.revisions, change_orders.qtys,
                                  change_orders.kind, v_changed);
  end if;
end
$$;
comment on function {{ .schema }}.change_orders(text, integer[], integer[], integer[], text) is
  'chunks helper: applies a job''s change of KIND (cancel: pending -> cancelled; restore: cancelled -> pending; revision + 1) to the given orders of TENANT (IDS ascending), each locked by its update in ascending id order, all or none (CH409 naming the first id that does not match its approval).';
