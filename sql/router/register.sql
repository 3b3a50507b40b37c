-- Routing register: the plan's tenant picks the shard, which records the
-- job (and queues it) exactly as register does on one server.
create or replace function {{ .schema }}.shard_register(tenant text, plan jsonb) returns boolean
language plproxy
as $$
  cluster '{{ .cluster }}';
  run on hashtext(tenant);
  select {{ .shard_schema }}.register(plan);
$$;
comment on function {{ .schema }}.shard_register(text, jsonb) is
  'chunks router helper: register(PLAN) on the shard of TENANT (PL/Proxy, RUN ON hashtext(tenant)); call register(plan) instead.';

create or replace function {{ .schema }}.register(plan jsonb) returns boolean
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
set client_min_messages = warning -- PL/Proxy's routine NOTICE when it reconnects after an error
as $$
declare
  v_tenant text;
  v_created boolean;
  v_state text;
  v_message text;
  v_detail text;
  v_hint text;
begin
  -- Only what picks the shard is checked here, with register's words; the
  -- shard checks the rest of the plan.
  if jsonb_typeof(register.plan) is distinct from 'object' then
    raise exception 'plan: must be an object with the keys job_id, tenant, targets, chunk_size, allow_partial, got %',
      coalesce(jsonb_typeof(register.plan), 'null') using errcode = '22023';
  end if;
  if not register.plan ? 'tenant' then
    raise exception 'plan: missing key "tenant"' using errcode = '22023';
  end if;
  if jsonb_typeof(register.plan -> 'tenant') <> 'string' then
    raise exception 'tenant: must be a string, got %', jsonb_typeof(register.plan -> 'tenant') using errcode = '22023';
  end if;
  v_tenant := register.plan ->> 'tenant';
  perform check_name(v_tenant, 'tenant');
  begin
    v_created := shard_register(v_tenant, register.plan);
  exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform shard_error(shard_of(v_tenant), v_state, v_message, v_detail, v_hint);
  end;
  return v_created;
end
$$;
comment on function {{ .schema }}.register(jsonb) is
$c$Registers an approved job on its tenant's shard (shard_of(plan ->> 'tenant')), exactly as register does
on one server: true when new, false when the same approval is already there; the job is queued there too.
A job id is unique per shard: the same id under two tenants of one shard is CH409.
Errors: 22023 bad input (the tenant here, the rest on the shard); CH409 a different job under this id;
08006 the tenant's shard cannot be reached (the message names it).$c$;
