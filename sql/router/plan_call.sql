{{- /*
  A routed call of a plan: <name>(plan jsonb) on the router runs
  <name>(plan) on the shard of the plan's tenant, as one autocommit
  transaction there. Only what picks the shard is checked here, with
  register's words; the shard checks the rest of the plan. Parameters (with
  the install data): name, returns, comment, and optionally args: the
  parameters before plan, each "name type" (register_change's change).
*/ -}}
{{- $args := default (list) .args }}
create or replace function {{ .schema }}.shard_{{ .name }}(tenant text{{ range $args }}, {{ . }}{{ end }}, plan jsonb) returns {{ .returns }}
language plproxy
as $$
  cluster '{{ .cluster }}';
  run on hashtext(tenant);
  select {{ .shard_schema }}.{{ .name }}({{ range $args }}{{ index (splitList " " .) 0 }}, {{ end }}plan);
$$;
comment on function {{ .schema }}.shard_{{ .name }}(text{{ range $args }}, {{ index (splitList " " .) 1 }}{{ end }}, jsonb) is
  'chunks router helper: {{ .name }}({{ range $args }}{{ upper (index (splitList " " .) 0) }}, {{ end }}PLAN) on the shard of TENANT (PL/Proxy, RUN ON hashtext(tenant)); call {{ .name }}({{ range $args }}{{ index (splitList " " .) 0 }}, {{ end }}plan) instead.';

create or replace function {{ .schema }}.{{ .name }}({{ range $args }}{{ . }}, {{ end }}plan jsonb) returns {{ .returns }}
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
set client_min_messages = warning -- PL/Proxy's routine NOTICE when it reconnects after an error
as $$
declare
  v_tenant text;
  v_result {{ .returns }};
  v_state text;
  v_message text;
  v_detail text;
  v_hint text;
begin
  if jsonb_typeof({{ .name }}.plan) is distinct from 'object' then
    raise exception 'plan: must be an object with the keys job_id, tenant, targets, chunk_size, allow_partial, got %',
      coalesce(jsonb_typeof({{ .name }}.plan), 'null') using errcode = '22023';
  end if;
  if not {{ .name }}.plan ? 'tenant' then
    raise exception 'plan: missing key "tenant"' using errcode = '22023';
  end if;
  if jsonb_typeof({{ .name }}.plan -> 'tenant') <> 'string' then
    raise exception 'tenant: must be a string, got %', jsonb_typeof({{ .name }}.plan -> 'tenant') using errcode = '22023';
  end if;
  v_tenant := {{ .name }}.plan ->> 'tenant';
  perform check_name(v_tenant, 'tenant');
  begin
    v_result := shard_{{ .name }}(v_tenant{{ range $args }}, {{ $.name }}.{{ index (splitList " " .) 0 }}{{ end }}, {{ .name }}.plan);
  exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform shard_error(shard_of(v_tenant), v_state, v_message, v_detail, v_hint);
  end;
  return v_result;
end
$$;
comment on function {{ .schema }}.{{ .name }}({{ range $args }}{{ index (splitList " " .) 1 }}, {{ end }}jsonb) is
$c${{ .comment }}
Errors: 22023 bad input (the tenant here, the rest on the shard); 08006 the tenant's shard cannot be
reached (the message names it).$c$;
