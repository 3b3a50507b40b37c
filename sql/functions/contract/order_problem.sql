-- Why an order cannot take its approved change now, in the words of a
-- conflict (README "Errors"), or NULL when it can: the order (all NULL when
-- it is missing) must have the job's tenant, state FROM_STATE, and the
-- approved revision and qty. change_orders raises the first of these;
-- check_plan reports each. A plain SQL expression so the planner inlines
-- it (no SET clause; STABLE as format() is; its callers pin search_path).
create or replace function {{ .schema }}.order_problem(approved_id bigint, approved_revision bigint, approved_qty bigint,
                                                       job_tenant text, from_state text, order_id integer,
                                                       order_tenant text, order_state text, order_revision integer,
                                                       order_qty integer)
returns text
language sql stable parallel safe
as $$
  select case
    when order_id is null then format('order %s: missing', approved_id)
    when order_tenant <> job_tenant then format('order %s: belongs to another tenant', approved_id)
    when order_state is distinct from from_state then format('order %s: state is %s', approved_id, order_state)
    when order_revision <> approved_revision then
      format('order %s: revision is %s, approved %s', approved_id, order_revision, approved_revision)
    when order_qty <> approved_qty then format('order %s: qty is %s, approved %s', approved_id, order_qty, approved_qty)
  end
$$;
comment on function {{ .schema }}.order_problem(bigint, bigint, bigint, text, text, integer, text, text, integer, integer) is
  'chunks helper: NULL when the order (ORDER_*; all NULL when missing) can take its approved change now (the job''s tenant, state FROM_STATE, the approved revision and qty), else the conflict in words: missing, another tenant, state, revision or qty.';
