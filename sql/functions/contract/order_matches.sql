-- docs/contract.md §5's "matching", in one place for report, job_status and
-- register_undo: the order (its tenant, qty, state, revision) still looks
-- the way the job left it: the job's tenant, the approved qty, the state a
-- job of KIND leaves (state_after: cancelled for cancel, pending for
-- restore) and the approved revision + 1. NULL for a missing order (all
-- NULL): callers test that first. A plain SQL expression so the planner
-- inlines it (no SET clause; its callers pin search_path, and state_after
-- is named in full).
create or replace function {{ .schema }}.order_matches(order_tenant text, order_qty integer, order_state text,
                                                       order_revision integer, job_tenant text, approved_revision bigint,
                                                       approved_qty bigint, kind text)
returns boolean
language sql immutable parallel safe
as $$
  select order_tenant = job_tenant and order_qty = approved_qty and order_state = {{ .schema }}.state_after(kind)
     and order_revision = approved_revision + 1
$$;
comment on function {{ .schema }}.order_matches(text, integer, text, integer, text, bigint, bigint, text) is
  'chunks helper: whether an order (tenant, qty, state, revision) still looks the way a job of KIND left it: the job''s tenant, the approved qty, state_after(KIND) (cancelled, or pending for an undo), approved revision + 1.';
