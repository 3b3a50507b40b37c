-- The contract's cancellation of orders, as a declared change: the one
-- definition that report, its drift count and the other shared code read
-- for a job that has no job_change row. Key id, tenant tenant, version
-- revision, expect qty, when state = 'pending', set state = 'cancelled';
-- its undo (job_kind restore) is the inverse, as for any change. Two
-- parameters of the generated code are the contract's: its audit target
-- is job_audit ("audit"), whose rows keep no column values (what a job
-- wrote is the definition's constants), and its messages are
-- order_problem's ("words": "order", as in "order 3: revision is 4,
-- approved 3"). orders is chunks' own table, so what reads it runs as
-- chunks' owner (change_status), never as the writer role, which may not
-- read chunks' schema. (It replaced order_matches: report's matching is
-- change_report_sql's now, for every change.)
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
-- targets against their orders now, locking nothing, and
-- orders_undo_preview an undo's (change_judge). Every install makes them
-- again, as it makes every declared change's.
create or replace function {{ .schema }}.install_orders_functions() returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  -- (the statement is change_check_sql's, built from a constant definition)
  -- @plpgsql_check_options: security_warnings = false
  execute change_check_sql(orders_change(), null);
  comment on function orders_preview(text, jsonb) is
    'chunks helper: the generated read-only check of the contract''s cancellation (orders_change(), change_check_sql), run as its caller: judges targets against their orders now in order_problem''s words, locking nothing (change_judge calls it).';
  -- Its undo restores cancelled orders to pending: the same change with
  -- when and set swapped, judged in the same words.
  execute change_check_sql(orders_change() || jsonb_build_object('name', 'orders_undo', 'when', orders_change() -> 'set',
                                                                 'set', orders_change() -> 'when'), null);
  comment on function orders_undo_preview(text, jsonb) is
    'chunks helper: the generated read-only check of the undo of the contract''s cancellation (orders_change() with when and set swapped), run as its caller: judges an undo''s targets against their orders now in order_problem''s words, locking nothing (change_judge calls it).';
end
$$;
comment on function {{ .schema }}.install_orders_functions() is
  'chunks helper: (re)creates the generated code of the contract''s cancellation (orders_preview, orders_undo_preview) from orders_change(), owned by chunks'' owner; every install calls it.';

-- The targets TARGETS of a job of the change DEFINITION (RESTORE: of its
-- undo), judged against their rows now by the change's generated check,
-- with no row lock: [{"key", "problem"}, ...] in the targets' order,
-- problem NULL when the row would take the chunk now. For orders,
-- chunks' owner's orders_preview or orders_undo_preview; for a declared
-- change, its preview_<name>, run as the writer, after checking that it is
-- still as chunks made it and that no temporary object stands in for what
-- code on the table reads (CH409 otherwise). check_plan, check_change and
-- campaign_check judge through it.
create or replace function {{ .schema }}.change_judge(definition jsonb, restore boolean, tenant text, targets jsonb) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_function text;
  v_problem text;
  v_result jsonb;
begin
  if change_judge.definition ->> 'audit' = 'job_audit' then
    if change_judge.restore then
      return orders_undo_preview(change_judge.tenant, change_judge.targets);
    end if;
    return orders_preview(change_judge.tenant, change_judge.targets);
  end if;
  v_function := (change_function_names(change_judge.definition ->> 'name')).preview;
  v_problem := coalesce((select f from writer_function_problem(format('%I.%I(text, jsonb)', '{{ .schema }}', v_function)) as f),
                        (select t from temp_objects_problem() as t));
  if v_problem is not null then
    raise exception 'change %: cannot check: % (chunks migrate says why and makes it again)', change_judge.definition ->> 'name',
      v_problem using errcode = 'CH409';
  end if;
  execute format('select %I.%I($1, $2)', '{{ .schema }}', v_function) into v_result using change_judge.tenant, change_judge.targets;
  return v_result;
end
$$;
comment on function {{ .schema }}.change_judge(jsonb, boolean, text, jsonb) is
  'chunks helper (check_plan, check_change, campaign_check): TARGETS of a job of change DEFINITION (RESTORE: its undo''s) judged now by the change''s generated check, no lock: [{"key", "problem"}]; CH409 when a declared change''s check is not as chunks made it.';
