-- The contract's cancellation of orders, as a declared change: the one
-- definition that report, its drift count and the other shared code read
-- for a job that has no job_change row. Key id, tenant tenant, version
-- revision, expect qty, when state = 'pending', set state = 'cancelled';
-- its undo (job_kind restore) is the inverse, as for any change. Its
-- audit target is job_audit ("audit"), whose rows keep no column values:
-- what a job wrote is the definition's constants. orders is chunks' own
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
                            'audit', 'job_audit')
$$;
comment on function {{ .schema }}.orders_change() is
  'chunks helper: the contract''s cancellation of orders as a declared change definition (key id, tenant, version revision, expect qty, when state pending, set state cancelled; audit job_audit), read by the code that serves every job.';
