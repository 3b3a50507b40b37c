-- docs/contract.md §5's "matching", in one place for report and job_status: the
-- order (its tenant, qty, state, revision) still looks the way the job left
-- it for TARGET. NULL for a missing order (all NULL): callers test that
-- first. A plain SQL expression so the planner inlines it (no SET clause;
-- its callers pin search_path).
create or replace function {{ .schema }}.order_matches(order_tenant text, order_qty integer, order_state text,
                                                       order_revision integer, job_tenant text, target jsonb)
returns boolean
language sql immutable parallel safe
as $$
  select order_tenant = job_tenant and order_qty = (target -> 'qty')::bigint and order_state = 'cancelled'
     and order_revision = (target -> 'revision')::bigint + 1
$$;
comment on function {{ .schema }}.order_matches(text, integer, text, integer, text, jsonb) is
  'chunks helper: whether an order (tenant, qty, state, revision) still looks the way its job left it for TARGET: the job''s tenant, the approved qty, cancelled, approved revision + 1.';
