-- The contract's cancellation of orders, as a declared change: the one
-- definition that report, its drift count and the other shared code read
-- for a job that has no job_change row. Key id, tenant tenant, version
-- revision, expect qty, when state = 'pending', set state = 'cancelled';
-- its undo (job_kind restore) is the inverse, as for any change. Two
-- parameters of the generated code are the contract's: its audit target
-- is job_audit ("audit"), whose rows keep no column values (what a job
-- wrote is the definition's constants), and its messages are
-- order_problem's ("words": "order 3: revision is 4, approved 3"). orders is chunks' own
-- table, so what reads it runs as chunks' owner (change_status), never as
-- the writer role, which may not read chunks' schema.
-- (It replaced order_matches: report's matching is now change_report_sql's, for every change.)
drop function if exists {{ .schema }}.order_matches(text, integer, text, integer, text, bigint, bigint, text);
create or replace function {{ .schema }}.orders_change() returns jsonb
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select jsonb_build_object('name', 'orders', 'table', '{{ .schema }}.orders', 'key', 'id', 'tenant', 'tenant',
                            'version', 'revision', 'expect', jsonb_build_array('qty'),
                            'when', jsonb_build_object('state', 'pending'), 'set', jsonb_build_object('state', 'cancelled'),
                            'audit', 'job_audit', 'words', 'order')
$$;
comment on function {{ .schema }}.orders_change() is
  'chunks helper: the contract''s cancellation of orders as a declared change definition (key id, tenant, version revision, expect qty, when state pending, set state cancelled; audit job_audit, words order), read by the code that serves every job.';

-- The generated code of the contract's cancellation (orders_change()),
-- made from its definition by the generator every declared change's code
-- comes from, in the contract's words, and owned by chunks' owner: orders
-- is chunks' own table, which only its owner can put code on, and the
-- writer role may not read it. orders_preview(tenant, targets) judges
-- targets against their orders now, locking nothing (check_plan). Every
-- install makes it again, as it makes every declared change's.
create or replace function {{ .schema }}.install_orders_functions() returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  -- (the statement is change_check_sql's, built from a constant definition)
  -- @plpgsql_check_options: security_warnings = false
  execute change_check_sql(orders_change(), null);
  comment on function orders_preview(text, jsonb) is
    'chunks helper: the generated read-only check of the contract''s cancellation (orders_change(), change_check_sql), run as its caller: judges targets against their orders now in order_problem''s words, locking nothing (check_plan calls it).';
end
$$;
comment on function {{ .schema }}.install_orders_functions() is
  'chunks helper: (re)creates the generated code of the contract''s cancellation (orders_preview) from orders_change(), owned by chunks'' owner; every install calls it.';
