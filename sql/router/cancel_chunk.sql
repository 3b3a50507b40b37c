-- Routing cancel_chunk: the tenant picks the shard, which cancels the
-- orders as cancel_chunk does on one server.
create or replace function {{ .schema }}.shard_cancel_chunk(tenant text, items jsonb) returns jsonb
language plproxy
as $$
  cluster '{{ .cluster }}';
  run on hashtext(tenant);
  select {{ .shard_schema }}.cancel_chunk(tenant, items);
$$;
comment on function {{ .schema }}.shard_cancel_chunk(text, jsonb) is
  'chunks router helper: cancel_chunk(TENANT, ITEMS) on the shard of TENANT (PL/Proxy, RUN ON hashtext(tenant)); call cancel_chunk(tenant, items) instead.';

create or replace function {{ .schema }}.cancel_chunk(tenant text, items jsonb) returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
set client_min_messages = warning -- PL/Proxy's routine NOTICE when it reconnects after an error
as $$
declare
  v_changes jsonb;
  v_state text;
  v_message text;
  v_detail text;
  v_hint text;
begin
  perform check_name(cancel_chunk.tenant, 'tenant');
  begin
    v_changes := shard_cancel_chunk(cancel_chunk.tenant, cancel_chunk.items);
  exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform shard_error(shard_of(cancel_chunk.tenant), v_state, v_message, v_detail, v_hint);
  end;
  return v_changes;
end
$$;
comment on function {{ .schema }}.cancel_chunk(text, jsonb) is
$c$Cancels approved orders of TENANT on the tenant's shard, all or none, as cancel_chunk does there
(ITEMS is [{"id", "revision", "qty"}, ...]; returns the changes in id order). It commits on the shard
before this returns, even inside a transaction of the router. Errors: as cancel_chunk (22023, CH409);
08006 the tenant's shard cannot be reached (the message names it).$c$;
